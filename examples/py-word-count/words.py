def long_words(text, min_len):
    """How many words of text have at least min_len letters."""
    count = 0
    for word in text.split():
        if len(word) > min_len:
            count += 1
    return count
