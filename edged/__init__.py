"""edged: offline speech announcements for Raspberry-Pi-class devices."""

__version__ = "0.1.0"
