"""Synthesis shared by every source: the scheduler (workers, priorities, per-source bounds) and
speech (voice pool + phrase cache + scheduler -> audio streams)."""

from .scheduler import AudioStream, Busy, Scheduler, SchedulerStopped, auto_workers, synthesis_workers
from .speech import Speech, SpeechStream, Utterance

__all__ = ["AudioStream", "Busy", "Scheduler", "SchedulerStopped", "Speech", "SpeechStream",
           "Utterance", "auto_workers", "synthesis_workers"]
