"""OpenAI-form requests -> Anthropic messages.create kwargs (and OpenAI kwargs)."""

from __future__ import annotations

import pytest

from replayci.formats import TranslationError
from replayci.formats.anthropic import DEFAULT_MAX_TOKENS
from replayci.providers.translate import to_wire

# What the 2.x SDK's messages.create names: sampling parameters are not among them.
MESSAGES_CREATE = frozenset({"model", "messages", "max_tokens", "system", "tools", "tool_choice", "stop_sequences",
                             "metadata", "thinking", "service_tier", "container", "mcp_servers"})


def to_anthropic(request, model, *, accepted=MESSAGES_CREATE):
    """The kwargs AnthropicProvider hands messages.create."""
    return to_wire(request, "anthropic", model, accepted=accepted)


def to_openai(request, model, *, accepted=None):
    """The kwargs OpenAIProvider hands chat.completions.create."""
    return to_wire(request, "openai-chat", model, accepted=accepted)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
}


def req(**kw):
    base = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    base.update(kw)
    return base


# ----------------------------------------------------------------------------- basics


def test_minimal_request():
    assert to_anthropic(req(), "claude-sonnet-4-5") == {
        "model": "claude-sonnet-4-5",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }


def test_model_argument_overrides_the_requests_model():
    assert to_anthropic(req(model="gpt-4o"), "claude-x")["model"] == "claude-x"


def test_default_max_tokens_is_1024():
    assert DEFAULT_MAX_TOKENS == 1024
    assert to_anthropic(req(), "m")["max_tokens"] == 1024


@pytest.mark.parametrize("key", ["max_tokens", "max_completion_tokens"])
def test_max_tokens_is_honoured(key):
    assert to_anthropic(req(**{key: 77}), "m")["max_tokens"] == 77


def test_max_tokens_wins_over_max_completion_tokens():
    assert to_anthropic(req(max_tokens=5, max_completion_tokens=9), "m")["max_tokens"] == 5


def test_input_request_is_not_mutated():
    r = req(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
        tools=[WEATHER],
        tool_choice="auto",
        temperature=0,
    )
    import copy

    before = copy.deepcopy(r)
    to_anthropic(r, "m")
    assert r == before


# ----------------------------------------------------------------------------- system


def test_system_messages_move_to_system():
    out = to_anthropic(
        req(
            messages=[
                {"role": "system", "content": "You are a weather bot."},
                {"role": "user", "content": "Paris?"},
            ]
        ),
        "m",
    )
    assert out["system"] == "You are a weather bot."
    assert out["messages"] == [{"role": "user", "content": "Paris?"}]


def test_several_system_and_developer_messages_are_joined_in_order():
    out = to_anthropic(
        req(
            messages=[
                {"role": "system", "content": "First."},
                {"role": "developer", "content": "Second."},
                {"role": "user", "content": "hi"},
                {
                    "role": "system",
                    "content": [
                        {"type": "text", "text": "Third "},
                        {"type": "text", "text": "part."},
                    ],
                },
            ]
        ),
        "m",
    )
    assert out["system"] == "First.\n\nSecond.\n\nThird part."
    assert [m["role"] for m in out["messages"]] == ["user"]


def test_no_system_key_without_system_messages():
    assert "system" not in to_anthropic(req(), "m")


def test_empty_system_messages_send_no_system():
    msgs = [{"role": "system", "content": ""}, {"role": "user", "content": "hi"}]
    assert "system" not in to_anthropic(req(messages=msgs), "m")


def test_system_with_an_image_is_refused():
    with pytest.raises(TranslationError, match=r"messages\[0\]"):
        to_anthropic(
            req(
                messages=[
                    {
                        "role": "system",
                        "content": [{"type": "image_url", "image_url": {"url": "x"}}],
                    },
                    {"role": "user", "content": "hi"},
                ]
            ),
            "m",
        )


# ----------------------------------------------------------------------------- tools


def test_function_tools_become_input_schema_tools():
    out = to_anthropic(req(tools=[WEATHER]), "m")
    assert out["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "input_schema": WEATHER["function"]["parameters"],
        }
    ]


def test_flat_tools_are_accepted():
    flat = {
        "name": "lookup",
        "description": "Find",
        "parameters": {"type": "object", "properties": {}},
    }
    assert to_anthropic(req(tools=[flat]), "m")["tools"] == [
        {
            "name": "lookup",
            "description": "Find",
            "input_schema": {"type": "object", "properties": {}},
        }
    ]


def test_tool_without_description_or_parameters():
    out = to_anthropic(req(tools=[{"type": "function", "function": {"name": "ping"}}]), "m")
    assert out["tools"] == [{"name": "ping", "input_schema": {"type": "object", "properties": {}}}]


def test_anthropic_shaped_tools_pass_through():
    tool = {"name": "x", "input_schema": {"type": "object"}}
    assert to_anthropic(req(tools=[tool]), "m")["tools"] == [tool]


def test_tool_without_name_is_refused():
    with pytest.raises(TranslationError, match=r"tools\[1\]"):
        to_anthropic(
            req(tools=[WEATHER, {"type": "function", "function": {"description": "?"}}]), "m"
        )


def test_no_tools_key_without_tools():
    out = to_anthropic(req(tools=[]), "m")
    assert "tools" not in out and "tool_choice" not in out


# ----------------------------------------------------------------------------- tool_choice


@pytest.mark.parametrize(
    "choice, expected",
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            {"type": "tool", "name": "get_weather"},
        ),
        ({"type": "tool", "name": "get_weather"}, {"type": "tool", "name": "get_weather"}),
        ({"type": "any"}, {"type": "any"}),
    ],
)
def test_tool_choice(choice, expected):
    assert to_anthropic(req(tools=[WEATHER], tool_choice=choice), "m")["tool_choice"] == expected


def test_no_tool_choice_when_absent():
    assert "tool_choice" not in to_anthropic(req(tools=[WEATHER]), "m")


def test_tool_choice_without_tools_is_dropped():
    # Anthropic refuses tool_choice without tools; OpenAI treats it as meaningless.
    assert "tool_choice" not in to_anthropic(req(tool_choice="auto"), "m")


@pytest.mark.parametrize("choice", ["sometimes", {"type": "function"}, {"type": "weird"}, 3])
def test_bad_tool_choice_is_refused(choice):
    with pytest.raises(TranslationError, match="tool_choice"):
        to_anthropic(req(tools=[WEATHER], tool_choice=choice), "m")


def test_parallel_tool_calls_false_disables_parallel_tool_use():
    out = to_anthropic(req(tools=[WEATHER], tool_choice="required", parallel_tool_calls=False), "m")
    assert out["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    out = to_anthropic(req(tools=[WEATHER], parallel_tool_calls=False), "m")
    assert out["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


# ----------------------------------------------------------------------------- conversation


def conversation():
    return [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"location": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "call_2", "content": '{"temp": 25}'},
    ]


def test_assistant_tool_calls_become_tool_use_blocks_with_parsed_input():
    out = to_anthropic(req(messages=conversation(), tools=[WEATHER]), "m")
    assistant = out["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "get_weather",
                "input": {"location": "Paris"},
            },
            {
                "type": "tool_use",
                "id": "call_2",
                "name": "get_weather",
                "input": {"location": "Rome"},
            },
        ],
    }


def test_consecutive_tool_messages_merge_into_one_user_message():
    out = to_anthropic(req(messages=conversation(), tools=[WEATHER]), "m")
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert out["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": '{"temp": 21}'},
            {"type": "tool_result", "tool_use_id": "call_2", "content": '{"temp": 25}'},
        ],
    }
    assert "_tool_results" not in str(out)


def test_user_text_after_tool_results_joins_the_same_turn_after_the_results():
    msgs = [*conversation(), {"role": "user", "content": "Which is warmer?"}]
    out = to_anthropic(req(messages=msgs), "m")
    last = out["messages"][-1]
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]
    assert last["content"][-1] == {"type": "text", "text": "Which is warmer?"}


def test_tool_results_separated_by_an_assistant_turn_stay_separate():
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "b", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "b", "content": "2"},
    ]
    out = to_anthropic(req(messages=msgs), "m")
    assert [m["role"] for m in out["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert out["messages"][2]["content"][0]["tool_use_id"] == "a"
    assert out["messages"][4]["content"][0]["tool_use_id"] == "b"


def test_assistant_text_and_tool_calls_keep_text_first():
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "x", "type": "function", "function": {"name": "f", "arguments": ""}}
            ],
        },
    ]
    out = to_anthropic(req(messages=msgs), "m")
    assert out["messages"][1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "x", "name": "f", "input": {}},
    ]


def test_plain_assistant_text_stays_a_string():
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]
    assert to_anthropic(req(messages=msgs), "m")["messages"][1] == {
        "role": "assistant",
        "content": "hello",
    }


def test_arguments_given_as_an_object_are_used_as_input():
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": {"a": 1}}}],
        },
    ]
    assert to_anthropic(req(messages=msgs), "m")["messages"][1]["content"][0]["input"] == {"a": 1}


def test_legacy_function_call_becomes_tool_use():
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "f", "arguments": '{"a": 2}'},
        },
    ]
    block = to_anthropic(req(messages=msgs), "m")["messages"][1]["content"][0]
    assert block == {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 2}}


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", "3"])
def test_unparseable_or_non_object_arguments_are_refused(arguments):
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": arguments}}],
        },
    ]
    with pytest.raises(TranslationError, match=r"messages\[1\]\.tool_calls\[0\]"):
        to_anthropic(req(messages=msgs), "m")


def test_tool_message_without_id_is_refused():
    with pytest.raises(TranslationError, match="tool_call_id"):
        to_anthropic(req(messages=[{"role": "tool", "content": "x"}]), "m")


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, ""),
        ({"temp": 21}, '{"temp": 21}'),
        ([{"type": "text", "text": "a"}], [{"type": "text", "text": "a"}]),
    ],
)
def test_tool_result_content_forms(content, expected):
    msgs = [{"role": "tool", "tool_call_id": "t", "content": content}]
    assert to_anthropic(req(messages=msgs), "m")["messages"][0]["content"][0]["content"] == expected


def test_user_content_parts_and_images():
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}},
            ],
        }
    ]
    assert to_anthropic(req(messages=msgs), "m")["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.invalid/cat.png"}},
    ]


@pytest.mark.parametrize(
    "messages, match",
    [
        (None, "messages"),
        ([{"role": "narrator", "content": "x"}], "role 'narrator'"),
        (["hi"], r"messages\[0\]"),
        ([{"role": "user", "content": [{"type": "audio"}]}], "cannot translate"),
    ],
)
def test_bad_messages_are_refused(messages, match):
    with pytest.raises(TranslationError, match=match):
        to_anthropic({"messages": messages}, "m")


# ----------------------------------------------------------------------------- sampling & others


def test_temperature_goes_through_extra_body_when_the_sdk_does_not_take_it():
    out = to_anthropic(
        req(temperature=0, top_p=0.9), "m", accepted={"model", "messages", "max_tokens"}
    )
    assert "temperature" not in out and "top_p" not in out
    assert out["extra_body"] == {"temperature": 0, "top_p": 0.9}


def test_temperature_defaults_to_extra_body_without_signature_info():
    assert to_anthropic(req(temperature=0.2), "m")["extra_body"] == {"temperature": 0.2}


def test_temperature_is_passed_directly_when_the_sdk_takes_it():
    out = to_anthropic(req(temperature=0), "m", accepted=MESSAGES_CREATE | {"temperature", "top_p"})
    assert out["temperature"] == 0 and "extra_body" not in out


def test_no_extra_body_without_sampling_parameters():
    assert "extra_body" not in to_anthropic(req(), "m")


def test_stop_becomes_stop_sequences():
    assert to_anthropic(req(stop="END"), "m")["stop_sequences"] == ["END"]
    assert to_anthropic(req(stop=["a", "b"]), "m")["stop_sequences"] == ["a", "b"]


def test_user_becomes_metadata_user_id():
    assert to_anthropic(req(user="u-42"), "m")["metadata"] == {"user_id": "u-42"}


def test_parameters_without_an_anthropic_equivalent_are_dropped():
    out = to_anthropic(
        req(
            seed=7, n=1, response_format={"type": "json_object"}, frequency_penalty=0.1, stream=True
        ),
        "m",
    )
    assert set(out) == {"model", "max_tokens", "messages"}


def test_installed_sdk_signature_has_no_temperature():
    """The premise of the extra_body route: re-check it against the installed SDK."""
    import inspect

    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url="http://127.0.0.1:9")
    try:
        params = inspect.signature(client.messages.create).parameters
    finally:
        client.close()
    assert "temperature" not in params
    assert {"system", "tools", "tool_choice", "max_tokens", "extra_body"} <= set(params)


# ----------------------------------------------------------------------------- OpenAI


def test_to_openai_overrides_model_and_keeps_params():
    r = req(tools=[WEATHER], tool_choice="auto", temperature=0, seed=3)
    out = to_openai(
        r, "gpt-4o", accepted={"model", "messages", "tools", "tool_choice", "temperature", "seed"}
    )
    assert out == {
        "model": "gpt-4o",
        "messages": r["messages"],
        "tools": [WEATHER],
        "tool_choice": "auto",
        "temperature": 0,
        "seed": 3,
    }


def test_to_openai_never_streams():
    out = to_openai(req(stream=True, stream_options={"include_usage": True}), "m")
    assert "stream" not in out and "stream_options" not in out


def test_to_openai_sends_unknown_params_in_extra_body():
    out = to_openai(req(top_k=5, temperature=0), "m", accepted={"model", "messages", "temperature"})
    assert out["extra_body"] == {"top_k": 5} and out["temperature"] == 0


def test_to_openai_needs_messages():
    with pytest.raises(TranslationError, match="messages"):
        to_openai({"model": "x"}, "m")
