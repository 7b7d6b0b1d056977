def first_word(text):
    """The first word of text, or an empty string."""
    words = text.split()
    if len(words) > 0:
        return words[0]
    return ""


def shout(text):
    """text in capitals, with an exclamation mark."""
    return text.upper() + "!"


def long_words(text, min_len):
    """How many words of text have at least min_len letters."""
    count = 0
    for word in text.split():
        if len(word) > min_len:
            count += 1
    return count
