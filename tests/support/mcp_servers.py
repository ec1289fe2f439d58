"""Small MCP servers for the tests, on the official SDK's server side.

`python mcp_servers.py weather` serves the weather tools on stdio (each start adds a line to
starts.log in its working directory).
`crash` exits at once with a message on stderr; `hang` never answers. `serve_http` serves the
weather tools over streamable HTTP on 127.0.0.1 from a thread of the test process, where
`change_tools` changes them.
"""
from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

from warmed import app_python

HERE = Path(__file__).resolve()


def command(mode: str) -> list[str]:
    """The command line that starts the server *mode* on stdio (in a fork of the warm Python, which
    has imported the SDK's server side: tests/support/warmed.py)."""
    return [*app_python(), str(HERE), mode]


def get_weather(city: str, unit: str = "c") -> dict:
    return {"city": city, "temp": 21, "unit": unit}


def get_weather_v2(city: str, days: int) -> dict:
    return {"city": city, "days": days}


def get_forecast(city: str) -> dict:
    return {"city": city}


def echo(text: str) -> str:
    return text


def population(city: str) -> int:
    return 2100000


def fail(reason: str) -> str:
    raise ValueError(reason)


def weather_app():
    """The weather tools: JSON text, plain text, structured and failing ones."""
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("weather", log_level="ERROR")
    app.add_tool(get_weather, description="Current weather for a city")
    app.add_tool(echo, description="Echo a text", structured_output=False)
    app.add_tool(population, description="Structured population")
    app.add_tool(fail, description="Always fails")
    return app


def change_tools(app) -> None:
    """The server's tools change: echo removed, get_forecast added, get_weather's schema changed."""
    app.remove_tool("echo")
    app.remove_tool("get_weather")
    app.add_tool(get_weather_v2, name="get_weather", description="Current weather for a city")
    app.add_tool(get_forecast, description="Forecast for a city")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_http(app):
    """Serve *app* over streamable HTTP on a free port; (url, stop)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), host="127.0.0.1", port=port,
                                           log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=5)

    return f"http://127.0.0.1:{port}/mcp", stop


def main(mode: str) -> None:
    if mode == "crash":
        print("weather: cannot open weather.db", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "hang":  # reads every request, answers none, leaves when its input closes
        for _ in sys.stdin:
            pass
        return
    with open("starts.log", "a") as log:  # in its working directory: where it was started, how often
        log.write(mode + "\n")
    weather_app().run()


if __name__ == "__main__":
    main(sys.argv[1])
