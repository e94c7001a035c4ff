"""The daemon: speech and announcement requests from every intake to their outcome.

    fields.py, requests.py (+ bounded_json.py)  untrusted fields -> a typed, checked request
    policy.py                        the one request policy every intake obeys
    admission.py                     an announcement's way into the queue (done-log, reply, ...)
    jobqueue.py, quiet.py            the bounded priority queue; quiet hours as the announcer lives them
    job.py, announcer.py             an accepted request; speaking one: speech -> player / MQTT audio
    core.py, parts.py                `Daemon`: paho thread and HTTP in, the announcer thread,
                                     preemption, control, events out; the parts it is made of
    events.py, outcomes.py, refusals.py   what it says: typed events, acks, refusal counts
    state.py, device_state.py        `<p>/state`; what a person sets at run time
    donelog.py, priorities.py        finished ids on disk; priorities and when one cuts in

Import from the modules: this package's `__init__` imports nothing, so rooms the daemon uses
(house/, which ranks announcements by priority) can import `priorities` without a cycle.
"""
