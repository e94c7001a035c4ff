"""Synthesis shared by every source: the plan of an utterance (parts, voices, settings, cache keys;
the router), the one scheduler (workers, priorities, per-source bounds), and speech (the plan,
the phrase cache and the scheduler -> audio streams)."""

from .plan import Planner, Segment, SpeechPart, Utterance, spoken
from .scheduler import Scheduler
from .speech import Speech, SpeechStream
from .streams import AudioStream, Busy, SchedulerStopped

__all__ = ["AudioStream", "Busy", "Planner", "Scheduler", "SchedulerStopped", "Segment", "Speech",
           "SpeechPart", "SpeechStream", "Utterance", "spoken"]
