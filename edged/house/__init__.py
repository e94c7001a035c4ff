"""The whole house: groups that start together, the synthesis pool's replies, quiet hours and
time-of-day volume, and what the device knows of its clock (docs/house.md)."""

from .clock import clock_state
from .instants import Instant, late_error, start_instant
from .reply import Reply, check_reply_topic
from .schedule import Schedule

__all__ = ["Instant", "Reply", "Schedule", "check_reply_topic", "clock_state", "late_error",
           "start_instant"]
