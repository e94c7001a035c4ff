"""Synthesis shared by every source: the plan of an utterance (parts, voices, settings, cache keys;
the router), the one scheduler (workers, priorities, per-source bounds), and speech (the plan,
the phrase cache and the scheduler -> audio streams)."""

from .plan import Planner, Segment, SpeechPart, Utterance, spoken
from .scheduler import AudioStream, Busy, Scheduler, SchedulerStopped
from .speech import Speech, SpeechStream

__all__ = ["AudioStream", "Busy", "Planner", "Scheduler", "SchedulerStopped", "Segment", "Speech",
           "SpeechPart", "SpeechStream", "Utterance", "spoken"]
