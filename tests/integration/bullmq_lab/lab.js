// A real BullMQ worker (or producer) for leaselog's BullMQ dialect test.
//
//   node lab.js add  PORT QUEUE COUNT
//   node lab.js work PORT QUEUE POD DIR MODE LOCK_MS STALLED_MS WORK_MS
//
// The worker logs what an application's event handlers log, through pino (JSON lines, pino's defaults;
// `hostname` is the pod's name, as in Kubernetes), to DIR/POD.log, with the wording of BullMQ's docs
// (docs/gitbook/quick-start.md) where they have one:
//   'active'    -> `Job ID is now active; previous status was PREV` (with jobId and lockDuration)
//   'completed' -> `ID has completed!`
//   'failed'    -> `ID has failed with MESSAGE`
//   'stalled'   -> `Job ID stalled`
//   'error'     -> pino's error record: the message is BullMQ's own (`Lock mismatch for job ...`)
// The truth goes to DIR/truth-POD.jsonl on the same clock (Date.now()): each job's processor start and
// end, `processedOn` (when the worker sent the `moveToActive` that set the job's lock), and when BullMQ
// answered the worker's finishing write (`completed`, or `refused`: each refusal). Coordination goes through files written synchronously (a blocked event loop cannot talk to Redis):
//   MODE block: the processor busy-waits (the event loop blocked) until DIR/b-started exists, then WORK_MS
//               longer, and returns; BullMQ's refusal of its completion writes DIR/a-refused.
//   MODE block-late: the same until DIR/b-completed exists (the other worker finished the job).
//   MODE block-await: the same until DIR/b-started, then WORK_MS with the event loop free (the lock
//               manager's renewal fails).
//   MODE take:  the processor writes DIR/b-started, waits (event loop free) until DIR/a-refused exists,
//               then WORK_MS longer.
//   MODE take-fast: the processor writes DIR/b-started and works WORK_MS; its completion writes
//               DIR/b-completed.
//   MODE work:  the processor works WORK_MS (event loop free: BullMQ renews the lock).
// SIGTERM closes the worker and exits.
'use strict';

const fs = require('fs');
const path = require('path');
const { Queue, Worker } = require('bullmq');
const pino = require('pino');

const [cmd, port, queueName] = process.argv.slice(2, 5);
const connection = { host: '127.0.0.1', port: Number(port), maxRetriesPerRequest: null };

function exists(file) {
  return fs.existsSync(file);
}

async function add(count) {
  const queue = new Queue(queueName, { connection });
  for (let i = 0; i < count; i++) {
    await queue.add('render-report', { n: i });
  }
  await queue.close();
}

function work(pod, dir, mode, lockMs, stalledMs, workMs) {
  const logger = pino(
    { base: { pid: process.pid, hostname: pod } },
    pino.destination({ dest: path.join(dir, `${pod}.log`), sync: true }),
  );
  const truthFile = path.join(dir, `truth-${pod}.jsonl`);
  const truth = (jobId, event, t = Date.now()) =>
    fs.appendFileSync(truthFile, JSON.stringify({ pod, jobId, event, t }) + '\n');

  const processor = async job => {
    truth(job.id, 'start');
    // the moment moveToActive was sent, which set the job's lock with PX lockDuration
    truth(job.id, 'processedOn', job.processedOn);
    if (mode.startsWith('block')) {
      // the event loop blocked: no lock renewal
      const waitFor = mode === 'block-late' ? 'b-completed' : 'b-started';
      while (!exists(path.join(dir, waitFor))) {}
      const until = Date.now() + workMs;
      if (mode === 'block-await') {
        // the event loop free again while the job goes on: the lock manager tries to renew
        await new Promise(resolve => setTimeout(resolve, workMs));
      } else {
        while (Date.now() < until) {}
      }
    } else if (mode === 'take-fast') {
      fs.writeFileSync(path.join(dir, 'b-started'), '');
      await new Promise(resolve => setTimeout(resolve, workMs));
    } else if (mode === 'take') {
      fs.writeFileSync(path.join(dir, 'b-started'), '');
      await new Promise(resolve => {
        const timer = setInterval(() => {
          if (exists(path.join(dir, 'a-refused'))) {
            clearInterval(timer);
            resolve();
          }
        }, 5);
      });
      await new Promise(resolve => setTimeout(resolve, workMs));
    } else {
      await new Promise(resolve => setTimeout(resolve, workMs));
    }
    truth(job.id, 'end');
    return { ok: true };
  };

  const worker = new Worker(queueName, processor, {
    connection,
    name: pod,
    concurrency: 1,
    lockDuration: lockMs,
    stalledInterval: stalledMs,
  });
  const lockDuration = worker.opts.lockDuration;
  worker.on('active', (job, prev) =>
    logger.info(
      { jobId: job.id, queue: queueName, lockDuration },
      `Job ${job.id} is now active; previous status was ${prev}`,
    ),
  );
  worker.on('completed', job => {
    logger.info({ jobId: job.id, queue: queueName }, `${job.id} has completed!`);
    truth(job.id, 'completed');
    fs.writeFileSync(path.join(dir, `completed-${pod}`), '');
    if (mode === 'take-fast') fs.writeFileSync(path.join(dir, 'b-completed'), '');
  });
  worker.on('failed', (job, err) =>
    logger.warn(
      { jobId: job && job.id, queue: queueName, err },
      `${job && job.id} has failed with ${err.message}`,
    ),
  );
  worker.on('stalled', (jobId, prev) =>
    logger.warn({ jobId, queue: queueName, prev }, `Job ${jobId} stalled`),
  );
  worker.on('error', err => {
    logger.error(err);
    const refused = /^(?:Missing lock|Lock mismatch) for job ([^\s.]+)/.exec(err.message);
    if (refused) {
      truth(refused[1], 'refused');
      fs.writeFileSync(path.join(dir, 'a-refused'), '');
    }
  });
  worker.on('ready', () => fs.writeFileSync(path.join(dir, `ready-${pod}`), ''));
  process.on('SIGTERM', async () => {
    await worker.close();
    process.exit(0);
  });
}

if (cmd === 'add') {
  add(Number(process.argv[5])).catch(err => {
    console.error(err);
    process.exit(1);
  });
} else if (cmd === 'work') {
  const [pod, dir, mode, lockMs, stalledMs, workMs] = process.argv.slice(5);
  work(pod, dir, mode, Number(lockMs), Number(stalledMs), Number(workMs));
} else {
  console.error('usage: lab.js add PORT QUEUE COUNT | work PORT QUEUE POD DIR MODE LOCK STALLED WORK');
  process.exit(2);
}
