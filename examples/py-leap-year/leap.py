def days_in_month(month):
    """Days in a month of a common year (1 is January)."""
    if month == 2:
        return 28
    if month in (4, 6, 9, 11):
        return 30
    return 31


def is_leap(year):
    """Whether year is a leap year in the Gregorian calendar."""
    return year % 4 == 0 and year % 100 == 0 or year % 400 == 0
