"""``python -m rawp_adapters.cli``."""

from rawp_adapters.cli import main

# Guarded: a worker process (anyio.to_process, multiprocessing) imports the parent's
# __main__ module again, as __mp_main__, and must not run the command a second time.
if __name__ == "__main__":
    raise SystemExit(main())
