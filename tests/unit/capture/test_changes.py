"""What `--update` prints per contract (the proxy, import and observe print it alike): cases added
and removed, and each pin from what to what, one line a change naming its file and case."""
from __future__ import annotations

from replayci.capture.changes import describe, pins

BEFORE = """tool: refund
golden_cases:
- id: damaged_order
  input_ref: refund/damaged_order.json
  assertions:
    output_invariants:
    - {path: $.tool_calls, length_eq: 1}
    expected_tool_calls:
    - name: refund
      argument_invariants:
      - {path: $.order_id, equals: A-1}
- id: late
  input_ref: refund/late.json
"""

AFTER = BEFORE.replace("tool: refund", "tool: lookup").replace("- name: refund", "- name: lookup").replace(
    "equals: A-1", "type: string").replace("- id: late\n  input_ref: refund/late.json\n",
                                           "- id: early\n  input_ref: refund/early.json\n")


def test_each_change_is_one_line_naming_its_contract_and_case():
    assert describe({"refund.yaml": BEFORE, "gone.yaml": BEFORE, "same.yaml": BEFORE},
                    {"refund.yaml": AFTER, "new.yaml": AFTER, "same.yaml": BEFORE}) == [
        "  gone.yaml: removed",
        "  new.yaml: new, 2 cases",
        "  refund.yaml: case early added",
        "  refund.yaml: case late removed",
        '  refund.yaml: tool "refund" -> "lookup"',
        '  refund.yaml: case damaged_order: $.tool_calls[0].name equals "refund" -> "lookup"',
        '  refund.yaml: case damaged_order: $.tool_calls[0].arguments.order_id equals "A-1" -> (none)',
        '  refund.yaml: case damaged_order: $.tool_calls[0].arguments.order_id type (none) -> "string"',
    ]


def test_a_rewrite_that_changes_no_pin_says_so_and_scenario_steps_are_named():
    assert describe({"a.yaml": BEFORE}, {"a.yaml": "# another header\n" + BEFORE}) == [
        "  a.yaml: rewritten (no case or pin changed)"]
    scenario = {"scenario": True, "trajectory": {"max_tool_calls": 2, "step_invariants": [
        {"step": 2, "invariants": [{"path": "$.tool_calls[0].name", "equals": "book_hotel"}]}]}}
    assert pins(scenario) == {"scenario": "true", "max_tool_calls": "2",
                              "step 2: $.tool_calls[0].name equals": '"book_hotel"'}
