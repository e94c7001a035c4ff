"""What the tests and the benchmarks share: real parts started for a test, and clients for them.

- paths, ports: the checkout, `python -m edged`, free loopback ports;
- broker: a mosquitto child process; watcher: a recording MQTT client;
- daemon: `edged run` as a child process; http_daemon: the daemon in this process with HTTP
  on; wyoming_server: a Wyoming server in this process and a real client's helpers;
- voices, tiny_voice: the prepared default voice and the few-KB test voice;
- alsa_sink: a real PortAudio device that writes to a file; notify: NOTIFY_SOCKET's other end;
- asr: speech recognition for word error rates; systemd_standin: run by a real systemd;
- fuzz_payloads, fuzz_configs, soak, soak_books: generators and engines of the long suites;
- cases: inputs several test modules check; fixtures: the pytest plugin (tests/conftest.py
  loads it), so every test gets the fixtures without importing them.

Importing this package imports nothing heavy: import the module you need. No module here is
named like a package it might shadow (http, wyoming): systemd_standin.py runs as a script, with
this folder first on sys.path.
"""
