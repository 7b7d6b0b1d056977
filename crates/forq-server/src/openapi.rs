//! The API's description, served at `/openapi.json`.

#[allow(clippy::wildcard_imports)] // the server's own types and imports
use crate::*;

pub(crate) async fn openapi() -> Json<Value> {
    Json(openapi_document())
}

/// The OpenAPI description of this API.
pub fn openapi_document() -> Value {
    let run_id =
        json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let after = json!({"name": "after", "in": "query", "required": false,
        "description": "a store-wide event id: only events after it", "schema": {"type": "integer"}});
    let json_ok =
        |what: &str| json!({"200": {"description": what, "content": {"application/json": {}}}});
    let sse_ok =
        |what: &str| json!({"200": {"description": what, "content": {"text/event-stream": {}}}});
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {"title": "forq", "version": env!("CARGO_PKG_VERSION"),
            "description": "forq's control plane: runs, their events live, goldens. Bound beyond loopback, every request needs `Authorization: Bearer <token>`."},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/api/runs": {"get": {"summary": "Runs, newest first", "parameters": [
                {"name": "state", "in": "query", "schema": {"type": "string"}},
                {"name": "repo", "in": "query", "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 200}}],
                "responses": {"200": {"description": "the runs; the header x-forq-last-event-id is the newest event id when they were read (stream from there to miss nothing)",
                    "content": {"application/json": {}}}}}},
            "/api/runs/{id}": {"get": {"summary": "A run and its events", "parameters": [run_id],
                "responses": json_ok("the run")}},
            "/api/runs/{id}/events": {"get": {"summary": "A run's events after a store id",
                "parameters": [run_id, after], "responses": json_ok("the events")}},
            "/api/runs/{id}/stream": {"get": {"summary": "A run's events as Server-Sent Events; resumes after Last-Event-ID; ends after the run",
                "parameters": [run_id, after], "responses": sse_ok("the events, live")}},
            "/api/runs/{id}/patch": {"get": {"summary": "The run's patch (fix.patch), once the search has ended", "parameters": [run_id],
                "responses": {"200": {"description": "a unified diff", "content": {"text/x-diff": {}}}, "404": {"description": "no patch yet"}}}},
            "/api/runs/{id}/tree": {"get": {"summary": "The run's search tree (tree.json), once the search has ended", "parameters": [run_id],
                "responses": json_ok("the tree")}},
            "/api/runs/{id}/files": {"get": {"summary": "The files of the run's workspace", "parameters": [run_id],
                "responses": json_ok("relative paths, sorted")}},
            "/api/runs/{id}/resume": {"post": {"summary": "Continue an interrupted run from its last checkpoint, in the background", "parameters": [run_id],
                "responses": {"202": {"description": "the run, as it was", "content": {"application/json": {}}},
                    "409": {"description": "over already, or being driven by a live process"}, "503": {"description": "the server was started without a pipeline"}}}},
            "/api/runs/{id}/approve": {"post": {"summary": "Approve a run paused for review (needs_review): it goes on from its checkpoint, in the background", "parameters": [run_id],
                "responses": {"202": {"description": "the run, moving on"}, "409": {"description": "the run is not paused for review"}}}},
            "/api/runs/{id}/reject": {"post": {"summary": "Reject a run paused for review: it is aborted with {\"reason\": …}", "parameters": [run_id],
                "responses": {"200": {"description": "the run, aborted"}, "409": {"description": "the run is not paused for review"}}}},
            "/api/runs/{id}/abort": {"post": {"summary": "Ask a run to stop", "parameters": [run_id],
                "responses": json_ok("the run")}},
            "/api/stream": {"get": {"summary": "Every run's events as Server-Sent Events; resumes after Last-Event-ID",
                "parameters": [after], "responses": sse_ok("the events, live")}},
            "/api/goldens": {"get": {"summary": "The golden environments", "responses": json_ok("the goldens")}},
            "/api/workers": {"get": {"summary": "The forq workers sharing the store: each one's host, labels, jobs, last heartbeat (silent past 30 s), load and the runs it drives; and how many runs are in each live state",
                "responses": json_ok("{now_ms, workers, live}")}},
            "/api/repos": {"get": {"summary": "Every repository a run was made on or a configured source names: its runs counted by state, its open issues, its cost, its golden (ready, broken with reason, syncing)",
                "responses": json_ok("{repos, problems}")}},
            "/api/trusted": {
                "get": {"summary": "The contributors a GitHub repository's forq.yml trusts (funding.trusted), read from its default branch",
                    "parameters": [{"name": "repo", "in": "query", "required": true, "schema": {"type": "string"}}],
                    "responses": json_ok("{repo, trusted}")},
                "post": {"summary": "Propose a change of funding.trusted: a branch and a pull request to the repository's forq.yml, which a person merges; the file is edited only where the list is",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
                        "properties": {"repo": {"type": "string"}, "add": {"type": "array", "items": {"type": "string"}}, "remove": {"type": "array", "items": {"type": "string"}}},
                        "required": ["repo"]}}}},
                    "responses": {"201": {"description": "{before, after, branch, pull_request}"}, "400": {"description": "not a login, or nothing to change"}, "422": {"description": "forq.yml does not parse, or cannot be edited safely"}}}},
            "/api/issues": {"get": {"summary": "A repository's issues from the configured sources, then those only its runs know, each with its latest run",
                "parameters": [{"name": "repo", "in": "query", "required": true, "schema": {"type": "string"}}],
                "responses": json_ok("{repo, name, issues: [{issue, run, queueable}], problems}")}}
        }
    });
    if let (Some(paths), Value::Object(more)) = (
        doc["paths"].as_object_mut(),
        action_paths(&run_id, &json_ok),
    ) {
        paths.extend(more);
    }
    doc
}

/// The paths that act: previews, pushes, the comments, labels and
/// closing, the queue, webhooks, and this description.
fn action_paths(run_id: &Value, json_ok: &dyn Fn(&str) -> Value) -> Value {
    json!({
            "/api/runs/{id}/preview": {"post": {"summary": "Start a preview of the run's fix: its workspace in a warm sandbox, forq.yml's golden.start serving golden.port in a network of the sandbox's own; answers once ready (golden.health_path when given)",
                "parameters": [run_id],
                "responses": {"201": {"description": "{key, url, run, start, port}: the preview's URL (/preview/KEY/) is its capability", "content": {"application/json": {}}},
                    "409": {"description": "no patch yet, or forq.yml names no preview"}, "502": {"description": "the application ended or was not ready in time"},
                    "503": {"description": "no pipeline, or the backend gives no service network"}}}},
            "/api/runs/{id}/push": {"post": {"summary": "Push the run's branch (never forcing over a commit that is not the run's) and, with pull_request, open a pull request (GITHUB_TOKEN) and tell the issue; as forq push does",
                "parameters": [run_id],
                "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "properties": {
                    "remote": {"type": "string", "description": "a remote configured in the run's workspace (default origin) or an https:// or ssh:// URL; never a path on the host"},
                    "pull_request": {"type": "boolean", "default": false},
                    "github": {"type": "string", "description": "OWNER/REPO for the pull request"},
                    "base": {"type": "string", "description": "the branch it goes into (default: the one the run was seeded from)"}}}}}},
                "responses": {"200": {"description": "{run, remote, branch, commit, pull_request?}", "content": {"application/json": {}}},
                    "409": {"description": "no committed patch, or the remote's branch is not the run's"}, "400": {"description": "no remote or GitHub repository to use"}, "502": {"description": "GitHub refused"}}}},
            "/api/runs/{id}/comment": {"post": {"summary": "Comment on the run's GitHub issue: {\"body\": …}", "parameters": [run_id],
                "responses": {"200": {"description": "{run, done}"}, "409": {"description": "the issue is not on GitHub"}}}},
            "/api/runs/{id}/label": {"post": {"summary": "Add labels to the run's GitHub issue: {\"labels\": […]}", "parameters": [run_id],
                "responses": {"200": {"description": "{run, done}"}, "409": {"description": "the issue is not on GitHub"}}}},
            "/api/runs/{id}/close": {"post": {"summary": "Close the run's GitHub issue, after a comment when {\"body\": …} is given", "parameters": [run_id],
                "responses": {"200": {"description": "{run, done}"}, "409": {"description": "the issue is not on GitHub"}}}},
            "/api/previews": {"get": {"summary": "Running previews", "responses": json_ok("[{key, url, run, start, port, started_ms, idle_s}]")}},
            "/api/previews/{key}": {"delete": {"summary": "Stop a preview (its sandbox is gone when this answers)",
                "parameters": [{"name": "key", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "stopped"}, "404": {"description": "no such preview"}}}},
            "/preview/{key}/{path}": {"get": {"summary": "The preview's application, relayed (any method); a preview idle longer than the server's limit is stopped", "security": [],
                "parameters": [{"name": "key", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "path", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "what the application answers"}, "404": {"description": "no such preview"}, "502": {"description": "the application does not answer"}}}},
            "/": {"get": {"summary": "The dashboard (needs no token itself: it asks for one and sends it with each call)", "security": [],
                "responses": {"200": {"description": "the page", "content": {"text/html": {}}}}}},
            "/api/queue": {"post": {"summary": "Queue issues and run them (as forq queue does): a directory of Markdown issues, a GitHub repository's issues, or one issue's text on a repository",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "properties": {
                    "issues": {"type": "string", "description": "a directory of Markdown issues"},
                    "text": {"type": "string", "description": "one issue's text (with repo)"},
                    "repo": {"type": "string", "description": "a directory, or a GitHub repository's URL"},
                    "action": {"type": "string", "enum": ["auto", "fix", "triage"], "default": "auto"},
                    "label": {"type": "string"}, "limit": {"type": "integer"},
                    "strategy": {"type": "string", "enum": ["speculative", "single"], "description": "over forq.yml's, for these runs"},
                    "brancher": {"type": "string", "enum": ["mutate", "templates", "llm", "agent"], "description": "over forq.yml's, for these runs"},
                    "ids": {"type": "array", "items": {"type": "string"}, "description": "only these issues; with a local repo alone, picked from the configured sources"},
                    "again": {"type": "boolean", "default": false}}}}}},
                "responses": {"202": {"description": "the runs queued (started in the background) and those standing already", "content": {"application/json": {}}},
                    "400": {"description": "the request names no issues, or a source cannot be read"},
                    "503": {"description": "the server was started without a pipeline"}}}},
            "/openapi.json": {"get": {"summary": "This description", "responses": json_ok("OpenAPI 3.1")}},
            "/webhooks/github": {"post": {"summary": "GitHub deliveries, signed (X-Hub-Signature-256) with the server's webhook secret; a delivery id is acted on once. issues opened/labeled and /forq fix|triage comments by the owner, members or collaborators queue runs; a push to the default branch syncs the golden",
                "security": [],
                "responses": {"200": {"description": "acknowledged: what was done (or why nothing)"}, "202": {"description": "runs queued, or a golden sync started"},
                    "401": {"description": "unsigned or wrongly signed"}, "404": {"description": "the server takes no webhooks"}}}}
    })
}
