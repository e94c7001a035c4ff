"""A Piper (VITS) voice: `.onnx` + `.onnx.json`, one ONNX Runtime session, text in, PCM out.

text -> normalize -> espeak-ng phonemes per sentence -> pieces of at most `max_phonemes`
(the first piece a short clause, so the first words are ready early) -> ids -> ONNX -> int16.
Bounding the piece length bounds activation memory and latency of every single inference.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, Final

import numpy as np

from ...audio import Audio, to_int16
from ...frontend.normalize import NORMALIZER_VERSION, normalize
from ...frontend.phonemes import PhonemeIds, PhonemizerError, phonemize
from ...frontend.sentences import Piece, split_for_streaming
from ...languages.codes import locale_language
from ..catalog.hashes import file_sha256
from ..errors import VoiceError
from ..lanes import Lanes
from ..onnx import Arena, open_session
from ..settings import SynthesisSettings, check_one_speaker, check_speed
from .config import PiperConfig, read_piper_config
from .model import Model, WholeModel
from .prepared import PreparedModel
from .sleep import SleepingModel
from .windows import FIRST_WINDOW_FRAMES

_LOGGER = logging.getLogger(__name__)

_REQUIRED_INPUTS: Final = ("input", "input_lengths", "scales")
# The first piece is the longest run of whole clauses up to this many phonemes (~1 s of
# speech), so the first audio is ready after a short inference.
_FIRST_PIECE_PHONEMES: Final = 80


class PiperVoice:
    """One loaded Piper voice (a `VoiceBackend`). Thread-safe: several threads may synthesize
    at once."""

    backend = "piper"

    def __init__(self, onnx_path: Path, config: PiperConfig, model: Model, *, threads: int,
                 max_phonemes: int, sentence_pause_ms: int, date_order: str,
                 precision: str = "float32") -> None:
        self.onnx_path = onnx_path
        self.json_path = Path(f"{onnx_path}.json")
        self.name = onnx_path.name.removesuffix(".onnx")
        self.config = config
        self.rate_hz = config.rate_hz
        self.espeak_voice = config.espeak_voice
        self.num_speakers = config.num_speakers
        self.speakers = config.speakers
        self.locale = config.language
        self.language = locale_language(config.language or "en")
        self.threads = threads
        self.max_phonemes = max_phonemes
        self.sentence_pause_ms = sentence_pause_ms
        self.date_order = date_order
        self._ids = PhonemeIds(config.phoneme_id_map)
        self._model = model
        self.precision = precision
        self._fingerprint: str | None = None
        self.hash_memo: Path | None = None
        """A file where the sha256 of the voice files is remembered across restarts."""

    # ----------------------------------------------------------------- loading
    @classmethod
    def load(
        cls,
        onnx_path: Path | str,
        *,
        threads: int = 1,
        max_phonemes: int = 100,
        sentence_pause_ms: int = 200,
        date_order: str = "mdy",
        prepared: PreparedModel | None = None,
        lanes: int = 1,
        memory_mb: int = 400,
        max_window: int | None = None,
        arena: Arena = "shared",
        sleep_after_s: float | None = None,
    ) -> PiperVoice:
        """Load a voice; `prepared` (see `prepared`) loads faster and bounds decoder memory, and
        its windows are decoded `lanes` at a time, sized for `memory_mb`, at most `max_window`
        frames (windows.py). `arena`: where its buffers come from (onnx.Arena). `sleep_after_s`:
        the sessions are opened when a stream needs them and dropped after that long idle
        (sleep.py); a prepared voice starts asleep."""
        onnx_path = Path(onnx_path)
        json_path = Path(f"{onnx_path}.json")
        if not onnx_path.is_file():
            raise VoiceError(f"{onnx_path}: voice model file not found")
        if not json_path.is_file():
            raise VoiceError(f"{json_path}: voice config file not found (expected next to the .onnx)")
        config = read_piper_config(json_path)
        model, prepared = _load_model(onnx_path, prepared, sleep_after_s, threads=threads,
                                      lanes=lanes, memory_mb=memory_mb, max_window=max_window,
                                      arena=arena)
        names = model.input_names
        missing = [n for n in _REQUIRED_INPUTS if n not in names]
        if missing:
            raise VoiceError(
                f"{onnx_path}: not a Piper voice: model inputs are {sorted(names)}, "
                f"missing {missing}"
            )
        multi = config.num_speakers > 1
        if multi and "sid" not in names:
            raise VoiceError(f"{onnx_path}: config says multi-speaker but the model has no 'sid' input")
        if not multi and "sid" in names:
            raise VoiceError(f"{onnx_path}: the model has a 'sid' input but config num_speakers is 1")
        _LOGGER.info("Loaded voice %s (%d Hz, %d speaker(s))", onnx_path.name, config.rate_hz,
                     config.num_speakers)
        return cls(onnx_path, config, model, threads=threads,
                   max_phonemes=max_phonemes, sentence_pause_ms=sentence_pause_ms,
                   date_order=date_order, precision=prepared.precision if prepared else "float32")

    @property
    def fingerprint(self) -> str:
        """sha256 over the model's and its config's sha256 (and the precision, when not float32):
        changes whenever the audio may."""
        if self._fingerprint is None:
            both = file_sha256(self.onnx_path, self.hash_memo) + file_sha256(self.json_path, self.hash_memo)
            if self.precision != "float32":
                both += self.precision
            self._fingerprint = hashlib.sha256(both.encode()).hexdigest()
        return self._fingerprint

    # ---------------------------------------------------------------- settings
    def settings(
        self,
        *,
        speaker: str | int | None = None,
        speed: float | None = None,
        noise_scale: float | None = None,
        noise_w: float | None = None,
    ) -> SynthesisSettings:
        """Per-request settings with the voice's defaults; VoiceError for a bad speaker or value."""
        speaker_id: int | None = None
        if self.num_speakers > 1:
            speaker_id = self._speaker_id(speaker)
        else:
            check_one_speaker(self.name, speaker)
        check_speed(speed)
        defaults = self.config
        length_scale = defaults.length_scale / speed if speed else defaults.length_scale
        return SynthesisSettings(
            speaker_id=speaker_id,
            length_scale=length_scale,
            noise_scale=defaults.noise_scale if noise_scale is None else float(noise_scale),
            noise_w=defaults.noise_w if noise_w is None else float(noise_w),
        )

    def _speaker_id(self, speaker: str | int | None) -> int:
        if speaker is None or speaker == "":
            return 0
        if isinstance(speaker, str) and speaker in self.speakers:
            return self.speakers[speaker]
        if isinstance(speaker, int) or (isinstance(speaker, str) and speaker.isdigit()):
            sid = int(speaker)
            if 0 <= sid < self.num_speakers:
                return sid
        names = ", ".join(sorted(self.speakers)[:10]) or f"ids 0..{self.num_speakers - 1}"
        raise VoiceError(f"voice {self.name} has no speaker {speaker!r}; known: {names}")

    # -------------------------------------------------------------- synthesis
    def normalize(self, text: str) -> str:
        return normalize(text, date_order=self.date_order)

    @property
    def normalizer_version(self) -> str:
        return NORMALIZER_VERSION

    def cache_recipe(self) -> dict[str, Any]:
        return {}  # Piper keys are exactly what they were before other backends came

    def pieces(self, text: str) -> list[Piece]:
        """The inferences `text` becomes, in order (normalized, phonemized, bounded)."""
        try:
            sentences = phonemize(self.normalize(text), self.espeak_voice)
        except PhonemizerError as err:
            raise VoiceError(f"voice {self.name}: {err}") from err
        # A phoneme string is text to the splitter: clauses end in ", " and words in " ".
        return split_for_streaming(["".join(sentence).strip() for sentence in sentences],
                                   self.max_phonemes, len,
                                   min(_FIRST_PIECE_PHONEMES, self.max_phonemes))

    def stream(self, text: str, settings: SynthesisSettings | None = None,
               lanes: Lanes | None = None) -> Iterator[Audio]:
        """Audio chunks in order: one per piece, or per decoder window of a prepared voice; a
        sentence pause ends each sentence but the last. Each `next()` is one step of work (an
        encoder run and a window, or one more window): the synthesis scheduler interleaves
        streams, and lets a critical one go first, at these steps. On a scheduler worker with
        `lanes` (a scheduler stream's), the windows are decoded on other workers too."""
        settings = settings or self.settings()
        pieces = self.pieces(text)
        feeds = [self._feeds(self._ids(piece.text), settings) for piece in pieces]
        # Each window goes out as soon as it is decoded: holding one back (to put the pause onto
        # the piece's last chunk) made the first audio wait for the second window.
        for part in self._model.stream(feeds, first_window=FIRST_WINDOW_FRAMES, lanes=lanes):
            yield Audio(to_int16(part.samples), self.rate_hz)
            piece = pieces[part.piece]
            if part.last and piece.ends_sentence and part.piece < len(pieces) - 1 \
                    and self.sentence_pause_ms:
                silence = np.zeros(self.rate_hz * self.sentence_pause_ms // 1000, dtype=np.int16)
                yield Audio(silence, self.rate_hz)

    def reclaim(self) -> None:
        """Give back what ONNX Runtime's arena keeps from earlier peaks (a run of one padding
        id with arena shrinkage: milliseconds)."""
        self._model.reclaim(self._feeds([0], self.settings()))

    def synthesize(self, text: str, settings: SynthesisSettings | None = None) -> Audio:
        """The whole announcement as one Audio."""
        return Audio.join(list(self.stream(text, settings)), self.rate_hz)

    def _feeds(self, ids: list[int], settings: SynthesisSettings) -> dict[str, np.ndarray]:
        feeds: dict[str, np.ndarray] = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array(
                [settings.noise_scale, settings.length_scale, settings.noise_w], dtype=np.float32
            ),
        }
        if self.num_speakers > 1:
            feeds["sid"] = np.array([settings.speaker_id or 0], dtype=np.int64)
        return feeds


def _load_model(onnx_path: Path, prepared: PreparedModel | None, sleep_after_s: float | None,
                **how: Any) -> tuple[Model, PreparedModel | None]:
    """The voice's model and the prepared model it runs (None: the .onnx as it is). With
    `sleep_after_s` a SleepingModel: a prepared one starts asleep (its manifest says the
    inputs), the .onnx as it is is opened now (its inputs known then) to fall asleep once idle;
    it always wakes as what it was at start, so its audio stays what the cache keys (the
    precision) say. `how`: `_open_model`'s threads, lanes, memory_mb, max_window and arena."""
    if sleep_after_s is None:
        return _open_model(onnx_path, prepared, **how)
    if prepared is not None:
        wake = partial(_wake_prepared, onnx_path, prepared, **how)
        return SleepingModel(wake, prepared.inputs, idle_s=sleep_after_s,
                             name=onnx_path.name), prepared
    reopen = partial(_open_whole, onnx_path, how["threads"], how["arena"])
    model = reopen()
    return SleepingModel(reopen, model.input_names, idle_s=sleep_after_s, name=onnx_path.name,
                         model=model), None


def _wake_prepared(onnx_path: Path, prepared: PreparedModel, *, threads: int, lanes: int,
                   memory_mb: int, max_window: int | None, arena: Arena) -> Model:
    """A sleeping voice's sessions. No fallback to the .onnx as it is, as at start: its audio
    would differ from what the cache keys (the precision) say."""
    try:
        return prepared.open(threads, lanes=lanes, memory_mb=memory_mb, max_window=max_window,
                             arena=arena)
    except Exception as err:  # onnxruntime raises its own exception types
        raise VoiceError(f"{onnx_path.name}: the prepared model in {prepared.folder} no longer "
                         f"loads ({err}); restart edged (it then loads the voice as it is, or "
                         "prepares it again)") from err


def _open_model(onnx_path: Path, prepared: PreparedModel | None, *, threads: int, lanes: int,
                memory_mb: int, max_window: int | None,
                arena: Arena) -> tuple[Model, PreparedModel | None]:
    """The prepared model if it opens, else the .onnx as it is (and no prepared model)."""
    if prepared is not None:
        try:
            return prepared.open(threads, lanes=lanes, memory_mb=memory_mb, max_window=max_window,
                                 arena=arena), prepared
        except Exception as err:  # onnxruntime raises its own exception types
            _LOGGER.warning("Prepared model %s does not load (%s); loading %s directly",
                            prepared.folder, err, onnx_path.name)
    return _open_whole(onnx_path, threads, arena), None


def _open_whole(onnx_path: Path, threads: int, arena: Arena) -> Model:
    try:
        return WholeModel(open_session(onnx_path, threads, arena=arena))
    except Exception as err:  # onnxruntime raises its own exception types for bad files
        raise VoiceError(f"{onnx_path}: not a loadable ONNX model: {err}") from err
