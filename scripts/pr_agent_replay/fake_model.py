"""A fake OpenAI-compatible model: `POST /v1/chat/completions` records every request and
answers with a plausible PR-Agent review (the YAML its review prompt asks for), naming a file
and a line from the diff it was sent.

Each request is written under the current label's directory as `call<n>.json` (the whole
request body, for reading) and, for counting, one `.txt` file a message
(`call<n>-m<i>-<role>.txt`) plus the `response_format` and `tools` JSON when the request has
them. The counter (`round_tokens --count`) reads the `.txt` files alone.
"""

import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler

from . import loopback


class Recorder:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.label = None
        self.lock = threading.Lock()
        self.calls = {}

    def record(self, body):
        with self.lock:
            label = self.label or "unlabelled"
            n = self.calls.get(label, 0) + 1
            self.calls[label] = n
        d = os.path.join(self.out_dir, label)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"call{n}.json"), "w") as f:
            json.dump(body, f, indent=1)
        for i, m in enumerate(body.get("messages", []), start=1):
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            with open(os.path.join(d, f"call{n}-m{i}-{m.get('role', 'x')}.txt"), "w") as f:
                f.write(content or "")
        for key in ("response_format", "tools"):
            if body.get(key):
                with open(os.path.join(d, f"call{n}-{key}.txt"), "w") as f:
                    f.write(json.dumps(body[key]))


def review_yaml(prompt):
    """A short review in PR-Agent's format that cites a real file and new line of `prompt`."""
    file_match = re.search(r"^## File: '([^']+)'", prompt, re.M)
    path = file_match.group(1) if file_match else "README.md"
    line = 1
    if file_match:
        after = prompt[file_match.end():]
        num = re.search(r"^(\d+) \+", after, re.M) or re.search(r"^(\d+) ", after, re.M)
        if num:
            line = int(num.group(1))
    return f"""```yaml
review:
  estimated_effort_to_review_[1-5]: |
    2
  relevant_tests: |
    No
  key_issues_to_review:
    - relevant_file: |
        {path}
      issue_header: |
        Possible Bug
      issue_content: |
        The new code does not handle an empty input; the first call with one would fail.
      start_line: {line}
      end_line: {line}
  security_concerns: |
    No
```"""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    recorder: Recorder = None

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.reply(404, {"error": {"message": f"no route {self.path}"}})
            return
        self.recorder.record(body)
        user = "\n".join(m.get("content") or "" for m in body.get("messages", [])
                         if m.get("role") == "user" and isinstance(m.get("content"), str))
        text = review_yaml(user)
        if body.get("stream"):
            self.stream(body, text)
            return
        self.reply(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

    def reply(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, body, text):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": body.get("model", "fake")}
        for delta, finish in (({"role": "assistant", "content": text}, None), ({}, "stop")):
            chunk = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True


def serve(recorder):
    """Starts the fake on a free loopback port; returns (server, base URL)."""
    return loopback.serve(Handler, recorder=recorder)
