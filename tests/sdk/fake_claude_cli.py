"""A stand-in for the Claude Code CLI that only knows the SDK's start-up handshake (run
as a script, not collected).

It answers the ``initialize`` control request as the real CLI does, reporting
``claude_code_version`` from its first argument, and exits when stdin closes. The SDK
passes its own flags after that; they are ignored.
"""

from __future__ import annotations

import json
import sys


def main(version: str) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        request = message.get("request") or {}
        if message.get("type") == "control_request" and request.get("subtype") == "initialize":
            response = {
                "subtype": "success",
                "request_id": message["request_id"],
                "response": {"commands": [], "claude_code_version": version},
            }
            sys.stdout.write(json.dumps({"type": "control_response", "response": response}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
