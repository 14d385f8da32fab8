#!/usr/bin/env bash
# The gate of the vitbench GitHub Action (action.yml), runnable anywhere (GitLab, Jenkins, a shell):
#
#   1. run COMMAND, which writes the current results to RESULTS (a RESULTS it did not write, such as
#      an earlier run's file, is refused);
#   2. find the baseline: BASELINE when given, else from the history store the rows of the
#      target branch's merge base (or, failing that, of the newest commit of the history that is
#      not this one);
#   3. vitbench compare BASELINE RESULTS --fail-on RULES: markdown to GATE_DIR/gate.md (appended to
#      $GITHUB_STEP_SUMMARY when set), JUnit XML to GATE_DIR/gate.xml;
#   4. comment on the pull request (PR_NUMBER, with the `gh` CLI and GH_TOKEN) when asked;
#   5. add RESULTS to the history under this commit (ADD_TO_HISTORY=true);
#   6. exit with compare's code (0 pass, 1 regression, 2 usage, configuration or file error), or 0
#      when there is no baseline yet (the first run only records).
#
# Fails closed: every run works in a fresh temporary folder and only then copies what it made to
# GATE_DIR (gate.md, gate.xml, baseline.csv, history-add.csv), whose earlier copies it removes
# first, so nothing an earlier run left there is read back; every value from the environment is
# passed after `--` or as `--option=VALUE`, so none is read as an option (RESULTS=-o.csv is a file);
# missing or malformed configuration exits 2 naming the variable (1 means a regression only); a
# history that exists but cannot be read exits 2 rather than passing as "no baseline yet".
#
# Environment: COMMAND, RESULTS (required); BASELINE, RULES, HISTORY (default vitbench-history),
# TARGET_BRANCH, GATE_DIR (default .), ADD_TO_HISTORY (default true), PR_NUMBER, COMMENT (default
# false), VITBENCH (default "python -m vitbench").
set -uo pipefail
note() { echo "vitbench gate: $*" >&2; }
refuse() { note "$*"; exit 2; }  # configuration or file error: never 1, which means a regression

[ -n "${COMMAND:-}" ] || refuse "COMMAND is not set: the command that writes the results"
[ -n "${RESULTS:-}" ] || refuse "RESULTS is not set: the results file COMMAND writes"
HISTORY=${HISTORY:-vitbench-history}
GATE_DIR=${GATE_DIR:-.}
ADD_TO_HISTORY=${ADD_TO_HISTORY:-true}
VITBENCH=${VITBENCH:-python -m vitbench}
case "${TARGET_BRANCH:-}" in -*) refuse "TARGET_BRANCH=$TARGET_BRANCH: a branch name cannot start with '-'" ;; esac
case "${PR_NUMBER:-}" in *[!0-9]*) refuse "PR_NUMBER=$PR_NUMBER: must be a pull request's number" ;; esac
case "$ADD_TO_HISTORY" in true | false) ;; *) refuse "ADD_TO_HISTORY=$ADD_TO_HISTORY: must be true or false" ;; esac

mkdir -p -- "$GATE_DIR" || refuse "GATE_DIR=$GATE_DIR: cannot be made"
OUTPUTS=(gate.md gate.xml baseline.csv history-add.csv)
for name in "${OUTPUTS[@]}"; do
  rm -f -- "$GATE_DIR/$name" || refuse "GATE_DIR=$GATE_DIR: an earlier run's $name cannot be removed"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/vitbench-gate.XXXXXX") || refuse "no temporary folder (TMPDIR=${TMPDIR:-/tmp})"
publish() {
  for name in "${OUTPUTS[@]}"; do
    [ -e "$work/$name" ] && cp -- "$work/$name" "$GATE_DIR/$name"
  done
  rm -rf -- "$work"
}
trap publish EXIT

# a file's identity: inode, size, modification time in ns ("absent" when there is none)
stamp() {
  python -c '
import os, sys
try:
    s = os.stat(sys.argv[1])
except OSError:
    print("absent")
else:
    print(s.st_ino, s.st_size, s.st_mtime_ns)' "$1"
}

note "running: $COMMAND"
before=$(stamp "$RESULTS") || refuse "no python here to run the gate's checks"
bash -c "$COMMAND" || { code=$?; note "the command failed (exit $code)"; exit "$code"; }
[ -s "$RESULTS" ] || refuse "RESULTS=$RESULTS: the command wrote nothing there"
[ "$before" = absent ] || [ "$(stamp "$RESULTS")" != "$before" ] \
  || refuse "RESULTS=$RESULTS: the command did not write it (the file there is an earlier run's)"

head=$(git rev-parse HEAD 2>/dev/null || true)
baseline=${BASELINE:-}
# a history folder that is there but empty is no history yet (one that holds anything must be read)
if [ -z "$baseline" ] && [ -d "$HISTORY" ] && [ -n "$(ls -A -- "$HISTORY" 2>/dev/null)" ]; then
  base_commit=""
  if [ -n "${TARGET_BRANCH:-}" ]; then
    base_commit=$(git merge-base HEAD "origin/$TARGET_BRANCH" 2>/dev/null || git merge-base HEAD "$TARGET_BRANCH" 2>/dev/null || true)
  fi
  if [ -z "$base_commit" ] || ! $VITBENCH history show --store="$HISTORY" --commit="$base_commit" --format=csv \
      --output="$work/baseline.csv" 2>/dev/null; then
    # the newest commit of the history that is not this one
    listed=$($VITBENCH history list --store="$HISTORY" --format=csv) || refuse "HISTORY=$HISTORY: cannot be read"
    base_commit=$(printf '%s\n' "$listed" | python -c "
import csv, sys
rows = [r['commit'] for r in csv.DictReader(sys.stdin) if r['commit'] != sys.argv[1]]
print(rows[-1] if rows else '')" "$head") || refuse "HISTORY=$HISTORY: its list of commits cannot be read"
    if [ -n "$base_commit" ]; then
      $VITBENCH history show --store="$HISTORY" --commit="$base_commit" --format=csv --output="$work/baseline.csv" \
        || refuse "HISTORY=$HISTORY: the rows of commit $base_commit cannot be read"
    fi
  fi
  [ -s "$work/baseline.csv" ] && baseline="$work/baseline.csv" && note "baseline: commit $base_commit of $HISTORY"
fi

code=0
if [ -z "$baseline" ]; then
  note "no baseline yet (no BASELINE, nothing in $HISTORY): recording only"
  echo "### vitbench gate: no baseline yet; this run's results are recorded" > "$work/gate.md"
else
  rules=()
  [ -n "${RULES:-}" ] && rules=(--fail-on="$RULES")
  $VITBENCH compare "${rules[@]}" --format=markdown --output="$work/gate.md" -- "$baseline" "$RESULTS"
  code=$?
  $VITBENCH compare "${rules[@]}" --format=junit --output="$work/gate.xml" -- "$baseline" "$RESULTS" || true
  [ -s "$work/gate.md" ] || echo "### vitbench gate: compare failed with exit code $code (no report)" > "$work/gate.md"
fi
cat -- "$work/gate.md"
[ -n "${GITHUB_STEP_SUMMARY:-}" ] && cat -- "$work/gate.md" >> "$GITHUB_STEP_SUMMARY"
if [ "${COMMENT:-false}" = true ] && [ -n "${PR_NUMBER:-}" ]; then
  if command -v gh >/dev/null; then
    gh pr comment "$PR_NUMBER" --body-file="$work/gate.md" || note "could not comment on #$PR_NUMBER (a fork's read-only token?)"
  else
    note "no gh CLI here: no pull-request comment"
  fi
fi
if [ "$ADD_TO_HISTORY" = true ]; then
  $VITBENCH history add --store="$HISTORY" --format=csv --output="$work/history-add.csv" -- "$RESULTS" \
    || { note "could not add to $HISTORY"; [ "$code" = 0 ] && code=2; }
fi
exit "$code"
