"""A stand-in for a real weather API, run by `tool_commands` under --replay auto|record.

replayci passes the call's arguments as JSON on stdin and reads the result as JSON on stdout
(the command runs in the pack directory). Offline runs never call it: they replay the result
recorded in recordings/weekend_porto/*.json.
"""
import json
import sys

FORECASTS = {"Porto": {"forecast": "showers", "high_c": 16, "low_c": 9},
             "Lisbon": {"forecast": "sunny", "high_c": 19, "low_c": 11}}

args = json.load(sys.stdin)
city = args.get("city")
if city not in FORECASTS:
    print(json.dumps({"error": f"no forecast for {city}"}))
else:
    print(json.dumps({"city": city, "date": args.get("date"), **FORECASTS[city]}))
