# Two commands on a fresh machine; each installs what it needs.
.PHONY: demo test

PROMPT ?= Write a short note about pipes to notes.txt

demo:  ## the main job: one offline agent session in this terminal
	@scripts/bootstrap
	@mkdir -p .cache/demo-workspace
	.venv/bin/rawp-adapters run --workspace .cache/demo-workspace "$(PROMPT)"

test:  ## lint, types and the whole test suite (real omp, pi and Claude SDK included)
	scripts/test
