"""``python -m rawp_adapters.cli``: the ``rawp-adapters`` command."""

from rawp_adapters._main import main

# Guarded: a worker process (anyio.to_process, multiprocessing) imports the parent's
# __main__ module again, as __mp_main__, and must not run the command a second time.
if __name__ == "__main__":
    raise SystemExit(main())
