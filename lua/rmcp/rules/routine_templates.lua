-- Curated routine templates (policy, hot-reloadable): complete prompts with conservative defaults —
-- overlap skip, tool_approval auto (never yolo), at most one change per run, nothing merged or closed
-- without the prompt saying so. reasonix_routine_from_template copies one; every field can be
-- changed before (overrides) or after (reasonix_routine_configure).
local M = {}

M.list = {
  {
    id = "issue-maintenance",
    name = "Issue maintenance",
    description = "Triage open issues: label, ask for missing details, link duplicates; fix at most one small, clear one.",
    schedule = "daily 09:00", overlap = "skip", delegation = "encouraged", tool_approval = "auto",
    prompt = [[Maintain this repository's open issues.
1. List the open issues and pull requests (gh issue list / gh pr list when the GitHub CLI is set up and
   authorised here; otherwise read ISSUES.md, TODO files or the tracker notes the repository keeps).
2. For each issue updated since the last report in the tracker: check whether it is a duplicate of another
   open or recently closed one, whether it lacks reproduction steps, and whether a pull request already
   addresses it. Note duplicates with a link to the original; never close an issue yourself.
3. Pick at most one well-scoped issue that is clearly a bug with a mechanical fix and that nobody is working on
   (no linked branch or pull request). Reproduce it with a failing test, fix it on a new branch named
   fix/<issue-number>-<short-slug>, run the focused tests, and commit with a message that names the issue.
4. Do not push, open or merge pull requests unless these instructions are edited to authorise it.
Report the issues you looked at, what you concluded for each, and the branch you made (if any).]],
  },
  {
    id = "pr-review",
    name = "Pull request review",
    description = "Review open pull requests no one has reviewed since their last push; report findings, change nothing.",
    schedule = "every 4h", overlap = "skip", delegation = "allowed", tool_approval = "auto",
    prompt = [[Review the open pull requests of this repository that have new commits since their last review.
For each one: read the description and the whole diff, check it out locally (git fetch origin
pull/<n>/head:review/<n>), build it and run the tests that cover what it changes. Look for correctness
bugs, missing tests, unhandled errors, security problems (injection, secrets, unchecked input), and
changes that break documented behaviour. Do not comment on style a formatter or linter would settle.
Write one review per pull request: a verdict (ready / needs changes / needs discussion) and each finding
with file:line and why it matters. Do not push to, approve, merge or close any pull request; post
comments only if these instructions are edited to authorise it. Delete the local review/<n> branches
when done. Report the reviews in full.]],
  },
  {
    id = "flaky-tests",
    name = "Flaky test hunt",
    description = "Rerun the test suite to find tests that fail intermittently; diagnose one and fix it on a branch.",
    schedule = "daily 03:00", overlap = "skip", delegation = "allowed", tool_approval = "auto",
    prompt = [[Find and fix flaky tests.
1. Work out how this repository runs its tests (README, CI configuration, Makefile, package scripts).
2. Run the suite (or its fastest sizeable part) several times — at least three — and collect every test
   that failed in one run and passed in another. Check the tracker and open branches for known flakes first.
3. For the worst new flake: find the cause (a race, a sleep used as synchronisation, shared state between
   tests, an order dependency, a time or port assumption). Fix the cause, not the symptom: no retries,
   no longer timeouts unless the timeout itself is the bug. Prove the fix by running that test many times.
4. Commit the fix on a new branch named flaky/<test-name>; do not push unless authorised.
Report every flaky test found with its failure rate and message, and the one you fixed.]],
  },
  {
    id = "dead-code-weak-tests",
    name = "Dead code and weak tests",
    description = "Find unused code and tests that cannot fail; remove or strengthen one batch on a branch.",
    schedule = "every 7d", overlap = "skip", delegation = "allowed", tool_approval = "auto",
    prompt = [[Look for dead code and weak tests, and clean up one coherent batch.
Dead code: functions, modules, options and flags nothing calls or reads (search every caller, including
scripts, configuration, tests and documentation; dynamic uses such as reflection or string lookups count).
Weak tests: tests that assert nothing, assert only that no exception was raised, duplicate another test, or
would still pass if the code under test were deleted (check by breaking the code on purpose).
Pick one batch that belongs together. Delete the dead code, or make the weak tests assert the behaviour
they are named after. Build, run the full test suite, and commit on a new branch named cleanup/<topic>;
do not push unless authorised. Report what you found (with file:line), what you changed, and what you
left for later and why.]],
  },
  {
    id = "duplicate-unification",
    name = "Duplicate unification",
    description = "Find code written twice; unify one set behind a single definition on a branch.",
    schedule = "every 7d", overlap = "skip", delegation = "allowed", tool_approval = "auto",
    prompt = [[Find logic that is implemented more than once and unify one set of duplicates.
Look for copied functions, near-identical blocks that differ in names only, parallel implementations of
the same rule (validation, parsing, formatting, retry logic) and constants defined in several places.
Pick the set whose duplication is most likely to cause a bug (copies that have already drifted apart are
the best candidates). Replace them with one well-named definition used everywhere, keeping behaviour
identical; where the copies disagree, decide which behaviour is right and say why. Build, run the full
test suite, and commit on a new branch named unify/<topic>; do not push unless authorised. Report every
duplicate set found, the one you unified, and any behaviour difference you resolved.]],
  },
  {
    id = "simplify-and-find-bugs",
    name = "Simplification and bug finding",
    description = "Read one area closely; simplify convoluted code and fix the bugs that reading reveals.",
    schedule = "daily 02:00", overlap = "skip", delegation = "encouraged", tool_approval = "auto",
    prompt = [[Pick one area of this repository that recent commits touched and read it closely.
Look for bugs (wrong conditions, off-by-one errors, unhandled errors and edge cases, resource leaks,
races, input that is trusted too much) and for code that is more complicated than what it does
(needless indirection, state that can be derived, flags that are always the same value).
For each bug: write a failing test first, then fix it. For each simplification: keep behaviour identical
and keep the change small enough to review at once. Build, run the full test suite, and commit on a new
branch named simplify/<area>; do not push unless authorised. Report the area you read, each bug with
file:line and how it shows, and each simplification.]],
  },
}

-- The template with id, or nil.
function M.get(id)
  for _, t in ipairs(M.list) do
    if t.id == id then return t end
  end
  return nil
end

return M
