"""An agent of the tests' own: three tools, a loop on the real openai (chat completions and
Responses) and anthropic SDKs, run under `replayci proxy -- python agent.py API` against the fake
provider, whose scripted answers mint new call ids every time."""
from __future__ import annotations

from fakeserver import Conversation, Reply

AGENT = r'''
import json, os, sys

API = sys.argv[1] if len(sys.argv) > 1 else "chat"
SYSTEM = os.environ.get("AGENT_SYSTEM", "You are a travel agent. Use the tools.")
QUESTION = os.environ.get("AGENT_QUESTION", "Plan a trip to Lisbon for two")
PARAMS = {
    "search_flights": {"type": "object", "properties": {"to": {"type": "string"}, "passengers": {"type": "integer"}},
                       "required": ["to", "passengers"]},
    "book_hotel": {"type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}},
                   "required": ["city", "nights"]},
    "get_weather": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
}


def run_tool(name, args):
    return json.dumps({"tool": name, "done": True, "args": args}, sort_keys=True)


def chat():
    import openai
    client = openai.OpenAI(api_key="sk-agent-test-0123456789abcdef", max_retries=0)
    tools = [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in PARAMS.items()]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    for _ in range(8):
        msg = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0].message
        if not msg.tool_calls:
            return msg.content
        messages.append(msg.model_dump(exclude_none=True))
        for c in msg.tool_calls:
            messages.append({"role": "tool", "tool_call_id": c.id,
                             "content": run_tool(c.function.name, json.loads(c.function.arguments))})
    return "gave up"


def messages():
    import anthropic
    client = anthropic.Anthropic(api_key="sk-ant-agent-test-0123456789", max_retries=0)
    tools = [{"name": n, "input_schema": p} for n, p in PARAMS.items()]
    convo = [{"role": "user", "content": QUESTION}]
    for _ in range(8):
        m = client.messages.create(model="claude-sonnet-4-5", max_tokens=200, system=SYSTEM, messages=convo,
                                   tools=tools)
        uses = [b for b in m.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in m.content if b.type == "text")
        convo.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]})
        convo.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id,
                                                   "content": run_tool(b.name, b.input)} for b in uses]})
    return "gave up"


def responses():
    import openai
    client = openai.OpenAI(api_key="sk-agent-test-0123456789abcdef", max_retries=0)
    tools = [{"type": "function", "name": n, "parameters": p} for n, p in PARAMS.items()]
    items = [{"role": "user", "content": QUESTION}]
    for _ in range(8):
        r = client.responses.create(model="gpt-4o-mini", instructions=SYSTEM, input=items, tools=tools)
        calls = [o for o in r.output if o.type == "function_call"]
        if not calls:
            return r.output_text
        items += [o.model_dump(exclude_none=True) for o in r.output]
        items += [{"type": "function_call_output", "call_id": c.call_id,
                   "output": run_tool(c.name, json.loads(c.arguments))} for c in calls]
    return "gave up"


print({"chat": chat, "messages": messages, "responses": responses}[API]())
'''


def trip() -> Conversation:
    """The scripted model of the trip: flights, then a hotel, then the answer."""
    return Conversation([Reply.tool_call("search_flights", {"to": "LIS", "passengers": 2}),
                         Reply.tool_call("book_hotel", {"city": "Lisbon", "nights": 3}),
                         Reply.plain_text("Booked: flights to LIS and 3 nights in Lisbon.")])


# The same trip on the OpenAI Agents SDK (openai-agents): function tools and a structured final
# output (output_type), over the Responses API; its tracing off (it would send traces away).
AGENTS_SDK = r'''
import os
from agents import Agent, Runner, function_tool, set_tracing_disabled
from pydantic import BaseModel

set_tracing_disabled(True)


class Trip(BaseModel):
    destination: str
    nights: int


@function_tool
def search_flights(to: str, passengers: int) -> str:
    """Find flights to an airport."""
    return f"2 flights to {to} for {passengers}"


@function_tool
def book_hotel(city: str, nights: int) -> str:
    """Book a hotel."""
    return f"booked {nights} nights in {city}"


@function_tool
def get_weather(location: str) -> str:
    """The weather somewhere."""
    return f"sunny in {location}"


agent = Agent(name="travel", instructions=os.environ.get("AGENT_SYSTEM", "You are a travel agent. Use the tools."),
              tools=[search_flights, book_hotel, get_weather], output_type=Trip, model="gpt-4o-mini")
result = Runner.run_sync(agent, os.environ.get("AGENT_QUESTION", "Plan a trip to Lisbon for two"), max_turns=8)
print(result.final_output)
'''
