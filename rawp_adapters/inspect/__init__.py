"""``rawp-adapters inspect``: a session's frames in the browser, live or recorded.

A local web app (Starlette on uvicorn, ``pip install 'rawp-adapters[inspect]'``) that
starts a session of an installed adapter, attaches to a remote one or opens a recorded
JSONL file, and shows every frame (raw and as a timeline) with the invariant checker's
verdict on each; the page answers questions and sends any control frame.
``rawp-adapters inspect --check FILE`` checks a recording without a browser.

Nothing here is imported unless the ``inspect`` command runs.
"""
