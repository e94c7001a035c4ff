"""Word tables for the normalizer: months, units, currencies, abbreviations, acronyms.

Changing any table changes normalized text: bump ``NORMALIZER_VERSION`` in normalize.py.
"""

from __future__ import annotations

from typing import Final

MONTHS: Final = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
MONTH_ABBREVIATIONS: Final = {
    "Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "Jun": 6, "Jul": 7, "Aug": 8,
    "Sep": 9, "Sept": 9, "Oct": 10, "Nov": 11, "Dec": 12,
}
MONTH_NUMBERS: Final = {name: i for i, name in enumerate(MONTHS, 1)} | MONTH_ABBREVIATIONS

UNITS: Final[dict[str, tuple[str, str]]] = {
    # unit as written after a number: (singular, plural). Case matters: m is metre, M is not.
    "%": ("percent", "percent"),
    "€": ("euro", "euros"),  # "5 €": read as money by the normalizer
    "°C": ("degree Celsius", "degrees Celsius"),
    "° C": ("degree Celsius", "degrees Celsius"),
    "°F": ("degree Fahrenheit", "degrees Fahrenheit"),
    "° F": ("degree Fahrenheit", "degrees Fahrenheit"),
    "°": ("degree", "degrees"),
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "mph": ("mile per hour", "miles per hour"),
    "m/s": ("meter per second", "meters per second"),
    "kWh": ("kilowatt hour", "kilowatt hours"),
    "MWh": ("megawatt hour", "megawatt hours"),
    "Wh": ("watt hour", "watt hours"),
    "mAh": ("milliamp hour", "milliamp hours"),
    "Ah": ("amp hour", "amp hours"),
    "kW": ("kilowatt", "kilowatts"),
    "MW": ("megawatt", "megawatts"),
    "W": ("watt", "watts"),
    "kV": ("kilovolt", "kilovolts"),
    "mV": ("millivolt", "millivolts"),
    "V": ("volt", "volts"),
    "mA": ("milliamp", "milliamps"),
    "Hz": ("hertz", "hertz"),
    "kHz": ("kilohertz", "kilohertz"),
    "MHz": ("megahertz", "megahertz"),
    "GHz": ("gigahertz", "gigahertz"),
    "ppm": ("part per million", "parts per million"),
    "ppb": ("part per billion", "parts per billion"),
    "µg/m3": ("microgram per cubic meter", "micrograms per cubic meter"),
    "ug/m3": ("microgram per cubic meter", "micrograms per cubic meter"),
    "hPa": ("hectopascal", "hectopascals"),
    "kPa": ("kilopascal", "kilopascals"),
    "mbar": ("millibar", "millibars"),
    "bar": ("bar", "bars"),
    "dB": ("decibel", "decibels"),
    "lux": ("lux", "lux"),
    "lx": ("lux", "lux"),
    "rpm": ("R-P-M", "R-P-M"),
    "ms": ("millisecond", "milliseconds"),
    "s": ("second", "seconds"),
    "sec": ("second", "seconds"),
    "secs": ("second", "seconds"),
    "min": ("minute", "minutes"),
    "mins": ("minute", "minutes"),
    "h": ("hour", "hours"),
    "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "km": ("kilometer", "kilometers"),
    "m": ("meter", "meters"),
    "cm": ("centimeter", "centimeters"),
    "mm": ("millimeter", "millimeters"),
    "m2": ("square meter", "square meters"),  # "m²" after normalize()'s first pass
    "m3": ("cubic meter", "cubic meters"),
    "ft": ("foot", "feet"),
    "kg": ("kilogram", "kilograms"),
    "g": ("gram", "grams"),
    "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"),
    "lbs": ("pound", "pounds"),
    "oz": ("ounce", "ounces"),
    "l": ("liter", "liters"),
    "L": ("liter", "liters"),
    "ml": ("milliliter", "milliliters"),
    "mL": ("milliliter", "milliliters"),
    "gal": ("gallon", "gallons"),
    "kB": ("kilobyte", "kilobytes"),
    "MB": ("megabyte", "megabytes"),
    "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"),
    "Mbps": ("megabit per second", "megabits per second"),
    "Mbit/s": ("megabit per second", "megabits per second"),
    "Gbps": ("gigabit per second", "gigabits per second"),
}
STANDALONE_UNITS: Final = (
    # read even without a number ("speed in km/h"); single letters would be ambiguous
    "km/h", "kWh", "mph", "ppm", "hPa", "dB", "°C", "°F", "kW", "km", "kg", "cm", "mm",
)

CURRENCIES: Final[dict[str, tuple[str, str, str, str]]] = {
    # symbol: (unit, units, hundredth, hundredths)
    "$": ("dollar", "dollars", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "€": ("euro", "euros", "cent", "cents"),
    "¥": ("yen", "yen", "sen", "sen"),
}
CURRENCY_SCALES: Final = {
    "k": "thousand", "K": "thousand", "M": "million", "B": "billion", "bn": "billion",
    "thousand": "thousand", "million": "million", "billion": "billion", "trillion": "trillion",
}

TITLES: Final = {"Mr": "Mister", "Mrs": "Missus", "Ms": "Miz", "Dr": "Doctor", "St": "Saint"}
"""Titles before a name; the period is optional (British "Mr Smith")."""
STREET_READINGS: Final = {"Dr": "Drive", "St": "Street"}
"""How Dr/St read after a name or number ("Elm St.", "5th St.")."""

ABBREVIATIONS: Final[dict[str, tuple[str, bool]]] = {
    # written (lower case, without the final period): (spoken, may end a sentence)
    "approx": ("approximately", False),
    "etc": ("et cetera", True),
    "e.g": ("for example", False),
    "i.e": ("that is", False),
    "vs": ("versus", False),
    "cf": ("compare", False),
    "ca": ("about", False),
    "prof": ("Professor", False),
    "jr": ("Junior", True),
    "sr": ("Senior", True),
    "ave": ("Avenue", True),
    "rd": ("Road", True),
    "blvd": ("Boulevard", True),
    "mt": ("Mount", False),
    "inc": ("Incorporated", True),
    "ltd": ("Limited", True),
    "dept": ("department", True),
    "apt": ("apartment", False),
    "bldg": ("building", False),
    "max": ("maximum", False),
    "min": ("minimum", False),
    "temp": ("temperature", False),
    "tel": ("telephone", False),
}

SPELLED: Final = frozenset(
    # all-caps words read letter by letter; words with no vowel are spelled anyway
    [
        "AC", "AI", "API", "AQI", "ATM", "CCTV", "CD", "CO", "CPU", "DC", "DIY", "DVD", "ETA", "EU",
        "EV", "FAQ", "FYI", "GPS", "GPU", "HDD", "HDMI", "ID", "IOT", "IP", "IR", "LCD", "LED",
        "NFC", "OS", "PC", "PIR", "PV", "RFID", "SOS", "SSD", "UK", "UN", "URL", "USA", "USB",
        "UPS", "UV", "VIP", "VOC",
    ]
)
KEEP_UPPER: Final = frozenset({"AM", "PM"})
"""Left as written: espeak-ng spells them, and "am" in lower case is the verb."""

TLDS: Final = frozenset([
    "com", "org", "net", "io", "local", "lan", "home", "arpa", "de", "uk", "eu", "fr", "nl", "ch",
    "info",
])
