#!/usr/bin/env bash
# The gate of the vitbench GitHub Action, kept for workflows that call this script: everything it
# does is `vitbench gate` (vitbench/cli/gate.py), configured by the same environment variables
# (COMMAND, RESULTS; BASELINE, RULES, HISTORY, TARGET_BRANCH, GATE_DIR, ADD_TO_HISTORY, PR_NUMBER,
# COMMENT, GITHUB_STEP_SUMMARY), so any CI runs it after installing vitbench, with nothing from
# vitbench's repository. VITBENCH (default "python -m vitbench") is the command that runs vitbench.
# Exit codes: 0 pass (or no baseline yet), 1 regression, 2 configuration, file or history error
# (one line naming the setting), 3 the command failed.
set -uo pipefail
# shellcheck disable=SC2086  # VITBENCH is a command line: its words are split on purpose
exec ${VITBENCH:-python -m vitbench} gate
