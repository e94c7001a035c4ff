"""A Piper (VITS) voice: `.onnx` + `.onnx.json`, one ONNX Runtime session, text in, PCM out.

text -> normalize -> espeak-ng phonemes per sentence -> pieces of at most `max_phonemes`
(the first piece a short clause, so the first words are ready early) -> ids -> ONNX -> int16.
Bounding the piece length bounds activation memory and latency of every single inference.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from .ahead import run_ahead
from .audio import Audio
from .frontend.normalize import NORMALIZER_VERSION, normalize
from .frontend.phonemes import PhonemeIds, PhonemizerError, phonemize
from .frontend.sentences import Piece, split_for_streaming
from .hashes import file_sha256
from .inference import Model, WholeModel, open_session
from .prepared_voice import PreparedModel

_LOGGER = logging.getLogger(__name__)

_REQUIRED_INPUTS: Final = ("input", "input_lengths", "scales")
# The first piece is the longest run of whole clauses up to this many phonemes (~1 s of
# speech), so the first audio is ready after a short inference.
_FIRST_PIECE_PHONEMES: Final = 80


class VoiceError(Exception):
    """A voice cannot be loaded or used; the message names the file or voice and what is wrong."""


@dataclass(frozen=True)
class SynthesisSettings:
    """Everything per request that changes the audio."""

    speaker_id: int | None
    length_scale: float
    noise_scale: float
    noise_w: float

    def cache_fields(self) -> dict[str, Any]:
        return {
            "speaker_id": self.speaker_id,
            "length_scale": round(self.length_scale, 6),
            "noise_scale": round(self.noise_scale, 6),
            "noise_w": round(self.noise_w, 6),
        }


class Voice:
    """One loaded voice. Thread-safe: several threads may synthesize at once."""

    def __init__(
        self,
        onnx_path: Path,
        json_path: Path,
        config: dict[str, Any],
        model: Model,
        *,
        threads: int,
        max_phonemes: int,
        sentence_pause_ms: int,
        date_order: str,
        precision: str = "float32",
    ) -> None:
        self.onnx_path = onnx_path
        self.json_path = json_path
        self.name = onnx_path.name.removesuffix(".onnx")
        self.sample_rate: int = int(config["audio"]["sample_rate"])
        self.espeak_voice: str = config["espeak"]["voice"]
        inference = config.get("inference", {})
        self.default_noise_scale = float(inference.get("noise_scale", 0.667))
        self.default_length_scale = float(inference.get("length_scale", 1.0))
        self.default_noise_w = float(inference.get("noise_w", 0.8))
        self.num_speakers = int(config.get("num_speakers", 1))
        self.speakers: dict[str, int] = dict(config.get("speaker_id_map") or {})
        self.language: str = (config.get("language") or {}).get("code", "")
        self.threads = threads
        self.max_phonemes = max_phonemes
        self.sentence_pause_ms = sentence_pause_ms
        self.date_order = date_order
        self._ids = PhonemeIds(config["phoneme_id_map"])
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
    ) -> Voice:
        """Load a voice; `prepared` (see `prepared_voice`) loads faster and bounds decoder memory."""
        onnx_path = Path(onnx_path)
        json_path = Path(f"{onnx_path}.json")
        if not onnx_path.is_file():
            raise VoiceError(f"{onnx_path}: voice model file not found")
        if not json_path.is_file():
            raise VoiceError(f"{json_path}: voice config file not found (expected next to the .onnx)")
        config = _read_voice_json(json_path)
        model, prepared = _open_model(onnx_path, threads, prepared)
        names = model.input_names
        missing = [n for n in _REQUIRED_INPUTS if n not in names]
        if missing:
            raise VoiceError(
                f"{onnx_path}: not a Piper voice: model inputs are {sorted(names)}, "
                f"missing {missing}"
            )
        multi = int(config.get("num_speakers", 1)) > 1
        if multi and "sid" not in names:
            raise VoiceError(f"{onnx_path}: config says multi-speaker but the model has no 'sid' input")
        if not multi and "sid" in names:
            raise VoiceError(f"{onnx_path}: the model has a 'sid' input but config num_speakers is 1")
        _LOGGER.info("Loaded voice %s (%d Hz, %d speaker(s))", onnx_path.name,
                     config["audio"]["sample_rate"], int(config.get("num_speakers", 1)))
        return cls(onnx_path, json_path, config, model, threads=threads,
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

    @property
    def missing_phonemes(self) -> dict[str, int]:
        return dict(self._ids.missing)

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
        elif speaker not in (None, "", 0, "0"):
            raise VoiceError(f"voice {self.name} has one speaker; got speaker {speaker!r}")
        if speed is not None and not 0.1 <= speed <= 10:
            raise VoiceError(f"speed {speed} is out of range 0.1..10")
        length_scale = self.default_length_scale / speed if speed else self.default_length_scale
        return SynthesisSettings(
            speaker_id=speaker_id,
            length_scale=length_scale,
            noise_scale=self.default_noise_scale if noise_scale is None else float(noise_scale),
            noise_w=self.default_noise_w if noise_w is None else float(noise_w),
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

    def pieces(self, text: str) -> list[Piece]:
        """The inferences `text` becomes, in order (normalized, phonemized, bounded)."""
        try:
            sentences = phonemize(self.normalize(text), self.espeak_voice)
        except PhonemizerError as err:
            raise VoiceError(f"voice {self.name}: {err}") from err
        pieces: list[Piece] = []
        for i, sentence in enumerate(sentences):
            # A phoneme string is text to the splitter: clauses end in ", " and words in " ".
            first = min(_FIRST_PIECE_PHONEMES, self.max_phonemes) if i == 0 else None
            pieces += split_for_streaming("".join(sentence).strip(), self.max_phonemes, len, first)
        return pieces

    def stream(self, text: str, settings: SynthesisSettings | None = None,
               lookahead: int = 1) -> Iterator[Audio]:
        """Audio chunks in order: one per piece, or per decoder window of a prepared voice; a
        sentence pause ends each sentence but the last.

        While the caller consumes a chunk, the next `lookahead` chunks are already being
        synthesized on a worker thread, so playback and inference overlap.
        """
        settings = settings or self.settings()
        pieces = self.pieces(text)
        if not pieces:
            return
        chunks = (chunk for i, piece in enumerate(pieces)
                  for chunk in self._piece_audio(piece, settings, last=i == len(pieces) - 1))
        if lookahead <= 0:
            yield from chunks
        else:
            yield from run_ahead(chunks, lookahead, name="edged-synth")

    def synthesize(self, text: str, settings: SynthesisSettings | None = None) -> Audio:
        """The whole announcement as one Audio."""
        return Audio.join(list(self.stream(text, settings, lookahead=0)), self.sample_rate)

    def _piece_audio(self, piece: Piece, settings: SynthesisSettings, last: bool) -> Iterator[Audio]:
        parts = self._model.stream(self._feeds(self._ids(piece.text), settings))
        pause = piece.ends_sentence and not last and self.sentence_pause_ms
        samples = _to_int16(next(parts))
        for following in parts:  # one behind, so the pause can go onto the piece's last chunk
            yield Audio(samples, self.sample_rate)
            samples = _to_int16(following)
        if pause:
            silence = np.zeros(self.sample_rate * self.sentence_pause_ms // 1000, dtype=np.int16)
            samples = np.concatenate([samples, silence])
        yield Audio(samples, self.sample_rate)

    def _feeds(self, ids: list[int], settings: SynthesisSettings) -> dict[str, np.ndarray]:
        feeds = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array(
                [settings.noise_scale, settings.length_scale, settings.noise_w], dtype=np.float32
            ),
        }
        if self.num_speakers > 1:
            feeds["sid"] = np.array([settings.speaker_id or 0], dtype=np.int64)
        return feeds


def _to_int16(audio: np.ndarray) -> np.ndarray:
    return (np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)


def _read_voice_json(json_path: Path) -> dict[str, Any]:
    try:
        config = json.loads(json_path.read_text(encoding="utf-8"))
    except OSError as err:
        raise VoiceError(f"{json_path}: cannot read: {err.strerror or err}") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise VoiceError(f"{json_path}: not valid JSON: {err}") from err
    if not isinstance(config, dict):
        raise VoiceError(f"{json_path}: expected a JSON object")
    for path in (("audio", "sample_rate"), ("espeak", "voice"), ("phoneme_id_map",)):
        node: Any = config
        for part in path:
            if not isinstance(node, dict) or part not in node:
                raise VoiceError(f"{json_path}: missing {'.'.join(path)}")
            node = node[part]
    if not isinstance(config["phoneme_id_map"], dict) or "^" not in config["phoneme_id_map"]:
        raise VoiceError(f"{json_path}: phoneme_id_map is not a Piper map (no '^')")
    return config


def _open_model(onnx_path: Path, threads: int,
                prepared: PreparedModel | None) -> tuple[Model, PreparedModel | None]:
    """The prepared model if it opens, else the .onnx as it is (and no prepared model)."""
    if prepared is not None:
        try:
            return prepared.open(threads), prepared
        except Exception as err:  # onnxruntime raises its own exception types
            _LOGGER.warning("Prepared model %s does not load (%s); loading %s directly",
                            prepared.folder, err, onnx_path.name)
    try:
        return WholeModel(open_session(onnx_path, threads)), None
    except Exception as err:  # onnxruntime raises its own exception types for bad files
        raise VoiceError(f"{onnx_path}: not a loadable ONNX model: {err}") from err
