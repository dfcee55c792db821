// Package llm talks to a language model: an OpenAI-compatible chat
// completions endpoint with tool calling (hosted APIs, or a local
// llama.cpp, vLLM or Ollama server), behind the small Client interface the
// agent loop is written against.
//
// Threat model: the API key is the secret this package holds. It comes
// only from the environment variable that [llm] api_key_env names — never
// from a config file, never from OPENAI_API_KEY or any other variable the
// SDK would read by default (the SDK's environment defaults are not used:
// OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS and the rest are
// ignored). The key goes into the Authorization header of requests to the
// configured base URL and nowhere else: it is not logged, it is scrubbed
// from every error this package returns (servers echo bad keys back), and
// redirects are refused so it is never replayed to another address. The
// model's replies are untrusted: they are parsed, bounded in size, and
// handed on as data; tool calls in them are only requests that the engine
// judges.
//
// Retries happen only on transient failures — HTTP 429, HTTP 5xx and
// network errors — never on a request the server refused (4xx), with
// exponential backoff that honours Retry-After (capped).
//
// Non-goals: streaming, the Responses API, images and audio. The security
// core (engine, tools, policy, workspace, shellpolicy, sandbox, approval)
// never imports this package; a test checks that.
package llm
