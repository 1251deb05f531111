// A Master in another language: Node.js with the `nats` npm package and nothing of
// rawp-adapters, following only specs/remote.md.
//
//   node master.js URL PREFIX METADATA_JSON WORKSPACE PROMPT
//
// Opens a session (METADATA_JSON: its AgentMetadata), sends PROMPT, and prints one JSON
// line per frame ({"session_id", "seq", "type", "connection"}: 1 or 2). At the first question it loses its
// connection, connects again, re-attaches after the last seq it saw (bisecting the
// stream as the spec says), allows the question, and once the turn has ended ends the
// session; it exits 0 after session.closed.
"use strict";

const crypto = require("node:crypto");
const { connect, DeliverPolicy } = require("nats");

const [url, prefix, metadataJson, workspace, prompt] = process.argv.slice(2);
const upper = prefix.toUpperCase().replaceAll(".", "_");
const FRAMES = `${upper}_FRAMES`;
const sessionId = crypto.randomUUID();
const subject = `${prefix}.frames.${sessionId}`;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let lastSeq = 0; // the seq of the last frame seen
let controlSeq = 0; // control frames' own seq, per sender

function control(type, payload) {
  controlSeq += 1;
  return {
    version: "rawp-dps-1.0",
    type,
    session_id: sessionId,
    seq: controlSeq,
    timestamp: new Date().toISOString(),
    payload,
  };
}

async function send(js, frame) {
  // Any unique Nats-Msg-Id: a publish tried again is stored once.
  await js.publish(`${prefix}.control.${sessionId}`, encoder.encode(JSON.stringify(frame)), {
    msgID: crypto.randomUUID(),
  });
}

function lastSeqOf(message) {
  const last = message.header && message.header.get("Rawp-Last-Seq");
  return last ? Number(last) : null;
}

// "Resuming after seq N": the stream sequence of the first stored message whose last
// seq is past `after`, or null to read the session from its first message.
async function startAfter(jsm, after) {
  if (after === 0) return null;
  let last;
  try {
    last = await jsm.streams.getMessage(FRAMES, { last_by_subj: subject });
  } catch {
    return null; // nothing stored yet
  }
  if (lastSeqOf(last) === null) return null;
  if (lastSeqOf(last) <= after) return last.seq + 1;
  let low = 1;
  let high = last.seq;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    const found = await jsm.streams.getMessage(FRAMES, { seq: middle, next_by_subj: subject });
    const seq = lastSeqOf(found);
    if (seq === null) return null;
    if (seq > after) high = middle;
    else low = found.seq + 1;
  }
  return low;
}

// The session's frames past lastSeq, read through `connection`, each printed.
async function* frames(nc, connection) {
  const js = nc.jetstream();
  const start = await startAfter(await nc.jetstreamManager(), lastSeq);
  const options = { filterSubjects: [subject] }; // from the first message by default
  if (start !== null) {
    Object.assign(options, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start });
  }
  const consumer = await js.consumers.get(FRAMES, options);
  const messages = await consumer.consume();
  try {
    for await (const message of messages) {
      for (const line of decoder.decode(message.data).split("\n")) {
        if (!line.trim()) continue;
        let frame;
        try {
          frame = JSON.parse(line);
        } catch {
          continue; // that frame's loss alone
        }
        if (frame.seq <= lastSeq) continue;
        lastSeq = frame.seq;
        const { session_id, seq, type } = frame;
        process.stdout.write(`${JSON.stringify({ session_id, seq, type, connection })}\n`);
        yield frame;
      }
    }
  } finally {
    messages.stop();
  }
}

async function main() {
  const servers = url.split(",");
  const first = await connect({ servers, name: "node-master" });
  const js = first.jetstream();
  let reading = frames(first, 1);
  const request = { session_id: sessionId, metadata: JSON.parse(metadataJson), workspace };
  await js.publish(`${prefix}.start`, encoder.encode(JSON.stringify(request)), {
    msgID: `start:${sessionId}`,
  });
  let question = null;
  for await (const frame of reading) {
    if (frame.type === "session.capabilities") {
      await send(js, control("control.prompt.request", { prompt_id: "p1", text: prompt }));
    }
    if (frame.type === "agent.interaction.request") {
      question = frame.payload.interaction_id;
      break;
    }
  }
  await first.close(); // the connection is lost mid-turn: the agent goes on streaming

  const second = await connect({ servers, name: "node-master" });
  reading = frames(second, 2);
  await send(second.jetstream(), control("control.interaction.response", {
    interaction_id: question,
    decision: "allow",
  }));
  for await (const frame of reading) {
    if (frame.type === "session.turn.end") {
      await send(second.jetstream(), control("control.session.end", {}));
    }
    if (frame.type === "session.closed") break;
  }
  await second.close();
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error.stack || error}\n`);
    process.exit(1);
  },
);
