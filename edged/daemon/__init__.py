"""The daemon: announcement requests from every intake to their outcome.

    requests.py (+ bounded_json.py)  untrusted payload -> a typed, checked request
    admission.py                     a request's way into the queue (done-log, reply, memory ...)
    jobqueue.py, quiet.py            the bounded priority queue; quiet hours as the announcer lives them
    job.py, announcer.py             an accepted request; speaking one: speech -> player / MQTT audio
    core.py                          `Daemon`: paho thread and HTTP in, the announcer thread, events out
    events.py, outcomes.py, refusals.py   what it says: typed events, acks, refusal counts
    state.py, device_state.py        `<p>/state`; what a person sets at run time
    donelog.py, priorities.py        finished ids on disk; priorities and when one cuts in

Import from the modules: this package's `__init__` imports nothing, so rooms the daemon uses
(house/, which ranks announcements by priority) can import `priorities` without a cycle.
"""
