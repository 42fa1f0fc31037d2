//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Fake model APIs for the agents other than Claude Code, served on host
// loopback behind the test CA (testCA.serveTLS) as the upstreams of a
// box's brokered credentials. Each records every request's method, path
// and headers; none reads more than it needs of a request.

// fakeLog records the requests a fake API got.
type fakeLog struct {
	mu   sync.Mutex
	reqs []fakeReq
}

func (f *fakeLog) record(r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, fakeReq{r.Method, r.URL.Path, r.Header.Clone()})
	f.mu.Unlock()
}

func (f *fakeLog) all() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeReq(nil), f.reqs...)
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

const (
	fakeCodexAnswer  = "Hello from the fake Responses API"
	fakeGeminiAnswer = "Hello from the fake Gemini API"
)

// fakeOpenAI is a fake OpenAI Responses API as Codex (0.171) uses it,
// measured against the real binary:
//
//   - it first asks for a WebSocket (GET BASE/responses with Upgrade); the
//     broker drops hop-by-hop headers (Upgrade, Connection), so the fake
//     sees a plain GET and answers 404, and Codex, after its five retries
//     (about 6 s of backoff), falls back to HTTP;
//   - POST BASE/responses with "stream": true (the body may be
//     zstd-compressed; it is not read) gets the event stream below:
//     response.created, the assistant message as one output item, and
//     response.completed with usage;
//   - anything else (a model listing) gets an empty list.
//
// The upstream of [credentials.openai] is https://127.0.0.1:PORT/v1.
type fakeOpenAI struct{ fakeLog }

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
	f.record(r)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
	case r.URL.Path == "/v1/responses":
		http.NotFound(w, r)
		return
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	msg := map[string]any{"type": "message", "role": "assistant", "id": "msg_e2e", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": fakeCodexAnswer, "annotations": []any{}}}}
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_e2e"}})
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0,
		"item": map[string]any{"type": "message", "role": "assistant", "id": "msg_e2e", "status": "in_progress", "content": []any{}}})
	sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_e2e",
		"output_index": 0, "content_index": 0, "delta": fakeCodexAnswer})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": msg})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": "resp_e2e", "status": "completed", "output": []any{msg},
		"usage": map[string]any{"input_tokens": 5, "input_tokens_details": nil, "output_tokens": 7,
			"output_tokens_details": nil, "total_tokens": 12}}})
}

// fakeGemini is a fake Gemini API (generativelanguage) as Gemini CLI
// (0.61) uses it with an API key, measured against the real bundle:
//
//   - POST /v1beta/models/MODEL:streamGenerateContent?alt=sse, the turn,
//     gets one server-sent event holding the whole answer;
//   - POST .../MODEL:generateContent (the model router's classifier, which
//     wants JSON) gets a candidate whose text is a routing choice;
//   - POST .../MODEL:countTokens gets a count; anything else an empty
//     object.
//
// The upstream of [credentials.gemini] is https://127.0.0.1:PORT.
type fakeGemini struct{ fakeLog }

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
	f.record(r)
	_, method, _ := strings.Cut(r.URL.Path, ":")
	usage := map[string]any{"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12}
	answer := func(text string) map[string]any {
		return map[string]any{"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"finishReason": "STOP", "index": 0}}, "usageMetadata": usage, "modelVersion": "gemini-e2e"}
	}
	switch {
	case r.Method != http.MethodPost:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"models":[]}`)
	case method == "streamGenerateContent":
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", answer(fakeGeminiAnswer))
	case method == "generateContent":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer(`{"reasoning": "a greeting", "model_choice": "flash"}`))
	case method == "countTokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"totalTokens": 5}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}
}
