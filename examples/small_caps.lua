-- Example 4 — tight caps for hosts with a small context window (a policy file: copy it into
-- $REASONIX_MCP_HOME/policy/). Shows the `caps` hook: a table of poll/watch caps (or a function
-- (name, value) -> value). watch and poll messages keep their first and last 300 bytes, poll's text
-- delta its last 2000, event tails hold 8 events by default (20 at most), full text 4000 bytes.
-- Every cut is reported in the result (message_truncated, text_truncated, events_dropped); the whole
-- story stays available through reasonix_transcript.

return {
  caps = {
    max_watch_message = 600,
    max_delta_text = 2000,
    max_full_text = 4000,
    max_events = 8,
    max_events_cap = 20,
  },
}
