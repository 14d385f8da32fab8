#!/usr/bin/env bash
# The gate of the vitbench GitHub Action (action.yml), runnable anywhere (GitLab, Jenkins, a shell):
#
#   1. run COMMAND, which writes the current results to RESULTS;
#   2. find the baseline: BASELINE when given, else from the history store the rows of the
#      target branch's merge base (or, failing that, of the newest commit of the history that is
#      not this one);
#   3. vitbench compare BASELINE RESULTS --fail-on RULES: markdown to GATE_DIR/gate.md (appended to
#      $GITHUB_STEP_SUMMARY when set), JUnit XML to GATE_DIR/gate.xml;
#   4. comment on the pull request (PR_NUMBER, with the `gh` CLI and GH_TOKEN) when asked;
#   5. add RESULTS to the history under this commit (ADD_TO_HISTORY=true);
#   6. exit with compare's code (0 pass, 1 regression, 2 usage or file error), or 0 when there
#      is no baseline yet (the first run only records).
#
# Environment: COMMAND, RESULTS (required); BASELINE, RULES, HISTORY (default vitbench-history),
# TARGET_BRANCH, GATE_DIR (default .), ADD_TO_HISTORY (default true), PR_NUMBER, COMMENT (default
# false), VITBENCH (default "python -m vitbench").
set -uo pipefail
: "${COMMAND:?COMMAND: the command that writes the results}" "${RESULTS:?RESULTS: the results file COMMAND writes}"
HISTORY=${HISTORY:-vitbench-history}
GATE_DIR=${GATE_DIR:-.}
ADD_TO_HISTORY=${ADD_TO_HISTORY:-true}
VITBENCH=${VITBENCH:-python -m vitbench}
mkdir -p "$GATE_DIR"
note() { echo "vitbench gate: $*" >&2; }

note "running: $COMMAND"
bash -c "$COMMAND" || { code=$?; note "the command failed (exit $code)"; exit "$code"; }
[ -s "$RESULTS" ] || { note "RESULTS=$RESULTS: the command wrote nothing there"; exit 2; }

head=$(git rev-parse HEAD 2>/dev/null || true)
baseline=${BASELINE:-}
if [ -z "$baseline" ] && [ -d "$HISTORY" ]; then
  base_commit=""
  if [ -n "${TARGET_BRANCH:-}" ]; then
    base_commit=$(git merge-base HEAD "origin/$TARGET_BRANCH" 2>/dev/null || git merge-base HEAD "$TARGET_BRANCH" 2>/dev/null || true)
  fi
  if [ -z "$base_commit" ] || ! $VITBENCH history show --store "$HISTORY" --commit "$base_commit" --format csv -o "$GATE_DIR/baseline.csv" 2>/dev/null; then
    # the newest commit of the history that is not this one
    base_commit=$($VITBENCH history list --store "$HISTORY" --format csv | python -c "
import csv, sys
rows = [r['commit'] for r in csv.DictReader(sys.stdin) if r['commit'] != sys.argv[1]]
print(rows[-1] if rows else '')" "$head")
    [ -n "$base_commit" ] && $VITBENCH history show --store "$HISTORY" --commit "$base_commit" --format csv -o "$GATE_DIR/baseline.csv"
  fi
  [ -s "$GATE_DIR/baseline.csv" ] && baseline="$GATE_DIR/baseline.csv" && note "baseline: commit $base_commit of $HISTORY"
fi

code=0
if [ -z "$baseline" ]; then
  note "no baseline yet (no BASELINE, nothing in $HISTORY): recording only"
  echo "### vitbench gate: no baseline yet; this run's results are recorded" > "$GATE_DIR/gate.md"
else
  rules=()
  [ -n "${RULES:-}" ] && rules=(--fail-on "$RULES")
  $VITBENCH compare "$baseline" "$RESULTS" "${rules[@]}" --format markdown -o "$GATE_DIR/gate.md"
  code=$?
  $VITBENCH compare "$baseline" "$RESULTS" "${rules[@]}" --format junit -o "$GATE_DIR/gate.xml" || true
  [ -s "$GATE_DIR/gate.md" ] || echo "### vitbench gate: compare failed with exit code $code (no report)" > "$GATE_DIR/gate.md"
fi
cat "$GATE_DIR/gate.md"
[ -n "${GITHUB_STEP_SUMMARY:-}" ] && cat "$GATE_DIR/gate.md" >> "$GITHUB_STEP_SUMMARY"
if [ "${COMMENT:-false}" = true ] && [ -n "${PR_NUMBER:-}" ]; then
  if command -v gh >/dev/null; then
    gh pr comment "$PR_NUMBER" --body-file "$GATE_DIR/gate.md" || note "could not comment on #$PR_NUMBER (a fork's read-only token?)"
  else
    note "no gh CLI here: no pull-request comment"
  fi
fi
if [ "$ADD_TO_HISTORY" = true ]; then
  $VITBENCH history add "$RESULTS" --store "$HISTORY" --format csv -o "$GATE_DIR/history-add.csv" || { note "could not add to $HISTORY"; [ "$code" = 0 ] && code=2; }
fi
exit "$code"
