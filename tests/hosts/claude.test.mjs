// Claude Code (`claude -p`, npm @anthropic-ai/claude-code) driving reasonix-mcp: registered as the
// README says, its model is the scripted API, so the host itself calls the tools; the real agent
// runs on the offline provider.
// needs: agent python3 clients hosts
import { test } from 'node:test';
import { hostSuite } from './suite.mjs';

hostSuite('claude', test);
