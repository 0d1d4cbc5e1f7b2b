"""A hand-written OpenEnv env folder of the last shape OpenEnv's repository holds (as its ``calendar_env``): the
``openenv.yaml`` app is a plain FastAPI app with routes of its own (``runtime: fastapi``), not a ``create_app`` app.

``cal_app_env`` (our own minimal code) keeps a tiny calendar: ``/health``; stateless-per-process ``/reset``,
``/step``, ``/state`` over HTTP; ``/ws`` speaking OpenEnv's session protocol (one calendar per connection, MCP-style
``list_tools`` / ``call_tool`` actions); ``/mcp`` JSON-RPC (``tools/list``, ``tools/call``); and a route of its own,
``GET /events``. A task asks for one event; adding it on the right day ends the episode with reward 1.0.
"""

from __future__ import annotations

from pathlib import Path

TASKS = [("standup", "monday"), ("review", "tuesday"), ("retro", "friday")]

APP = '''
import json
import uuid

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect

TASKS = __TASKS__
TOOLS = [
    {"name": "add_event", "description": "Add an event on a day of the week.",
     "input_schema": {"type": "object", "properties": {"title": {"type": "string"}, "day": {"type": "string"}},
                      "required": ["title", "day"]}},
    {"name": "list_events", "description": "The events added so far.",
     "input_schema": {"type": "object", "properties": {}}},
]


class Calendar:
    def __init__(self) -> None:
        self.reset()

    def reset(self, seed=None, episode_id=None):
        self.task = TASKS[(seed or 0) % len(TASKS)]
        self.events = []
        self.episode_id = episode_id or str(uuid.uuid4())
        self.step_count = 0
        return {"observation": {"task": f"Add the event {self.task[0]!r} on {self.task[1]}.", "events": []},
                "reward": 0.0, "done": False}

    def call(self, name, arguments):
        if name == "add_event":
            self.events.append({"title": arguments["title"], "day": arguments["day"]})
            return {"added": len(self.events)}
        if name == "list_events":
            return list(self.events)
        raise KeyError(name)

    def step(self, action):
        self.step_count += 1
        if action.get("type") == "list_tools":
            return {"observation": {"tools": TOOLS}, "reward": None, "done": False}
        name = action.get("tool_name")
        try:
            value = self.call(name, action.get("arguments") or {})
        except KeyError:
            error = {"error_type": "tool_not_found", "message": f"no tool {name!r}"}
            return {"observation": {"tool_name": name, "result": None, "error": error}, "reward": None, "done": False}
        solved = {"title": self.task[0], "day": self.task[1]} in self.events
        return {"observation": {"tool_name": name, "result": {"data": value}, "error": None},
                "reward": 1.0 if solved else 0.0, "done": solved}

    def state(self):
        return {"episode_id": self.episode_id, "step_count": self.step_count, "events": len(self.events)}


def rpc(calendar, request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "tools/list":
        result = {"tools": [{"name": t["name"], "description": t["description"], "inputSchema": t["input_schema"]}
                            for t in TOOLS]}
    elif method == "tools/call":
        try:
            value = calendar.call(params.get("name"), params.get("arguments") or {})
        except KeyError:
            return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32603, "message": "unknown tool"}}
        result = {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": {"result": value}}
    else:
        return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": result}


app = FastAPI(title="cal_app_env", version="0.1.0")
shared = Calendar()  # the HTTP routes' calendar (one per process, as a database would be)


@app.get("/health")
def health():
    return {"status": "healthy"}


@app.post("/reset")
async def http_reset(request: Request):
    body = await request.json() if await request.body() else {}
    return shared.reset(body.get("seed"), body.get("episode_id"))


@app.post("/step")
async def http_step(request: Request):
    return shared.step((await request.json())["action"])


@app.get("/state")
def http_state():
    return shared.state()


@app.get("/events")
def events():
    return {"events": shared.events}


@app.post("/mcp")
async def mcp(request: Request):
    return rpc(shared, await request.json())


@app.websocket("/ws")
async def session(ws: WebSocket):
    await ws.accept()
    calendar = Calendar()
    try:
        while True:
            message = json.loads(await ws.receive_text())
            kind, data = message.get("type"), message.get("data") or {}
            if kind == "close":
                await ws.close(1000)
                return
            if kind == "reset":
                reply = {"type": "observation", "data": calendar.reset(data.get("seed"), data.get("episode_id"))}
            elif kind == "step":
                reply = {"type": "observation", "data": calendar.step(data)}
            elif kind == "state":
                reply = {"type": "state", "data": calendar.state()}
            elif kind == "mcp":
                reply = {"type": "mcp", "data": rpc(calendar, data)}
            else:
                reply = {"type": "error", "data": {"code": "UNKNOWN_TYPE", "message": f"unknown type {kind!r}"}}
            await ws.send_text(json.dumps(reply))
    except WebSocketDisconnect:
        return
'''.replace("__TASKS__", repr(TASKS))


def write_app_folder(root: Path, name: str = "cal_app_env", app: str = APP) -> Path:
    """Write the folder ``name`` under ``root``: ``openenv.yaml`` (``runtime: fastapi``, ``app: server.app:app``),
    a pyproject needing only FastAPI, and ``server/app.py`` (``app`` replaces the FastAPI app's source)."""
    folder = root / name
    (folder / "server").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "openenv.yaml").write_text(f"spec_version: 1\nname: {name}\ntype: space\nruntime: fastapi\n"
                                         "app: server.app:app\nport: 8004\n")
    (folder / "pyproject.toml").write_text(f'[project]\nname = "openenv-{name}"\nversion = "0.1.0"\n'
                                           'dependencies = ["fastapi", "uvicorn"]\n')
    (folder / "server" / "__init__.py").write_text("")
    (folder / "server" / "app.py").write_text(app)
    return folder
