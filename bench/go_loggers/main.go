// Writes one short lease incident through Go's two most used JSON loggers at their default time
// formats: pod-a through zerolog (github.com/rs/zerolog, `TimeFieldFormat = time.RFC3339` in globals.go),
// pod-b through logrus (github.com/sirupsen/logrus, `defaultTimestampFormat = time.RFC3339` in
// formatter.go, used by json_formatter.go). Both are RFC 3339 with whole seconds. With `-fine` the same
// incident is written with zerolog's `TimeFormatUnixMs` and logrus's `time.RFC3339Nano` instead.
//
// The moments are set, not slept for (zerolog's TimestampFunc, logrus's Entry.WithTime), so the files are
// the same on every run; every line carries `elapsedMs` since its execution began.
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go run bench/go_loggers/main.go -out DIR [-fine]
package main

import (
	"flag"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/sirupsen/logrus"
)

type line struct {
	atMs    int64 // from the incident's start
	event   string
	elapsed int64
	extra   map[string]interface{}
}

func main() {
	out := flag.String("out", ".", "folder to write pod-a.jsonl and pod-b.jsonl into")
	fine := flag.Bool("fine", false, "millisecond (zerolog) and nanosecond (logrus) times")
	flag.Parse()
	// a moment 600 ms into a second: the whole-second times truncate every line
	t0 := time.Date(2026, 11, 3, 9, 0, 0, 600_000_000, time.UTC)
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	// pod-a: acquires a 2 s lease, renews once, then stalls (a GC pause) and runs on past its lease
	a := []line{
		{0, "job_triggered", 0, map[string]interface{}{"trigger": "schedule"}},
		{10, "lock_acquired", 10, map[string]interface{}{"leaseMs": 2000, "fencingToken": 1}},
		{12, "job_started", 12, nil},
		{700, "lease_renewal", 700, map[string]interface{}{"renewalOutcome": "success", "leaseMs": 2000}},
		{4420, "job_finished", 4420, map[string]interface{}{"status": "ok"}},
		{4425, "lock_released", 4425, map[string]interface{}{"released": false}},
	}
	// pod-b: acquires once pod-a's lease expired, runs 2.4 s, releases
	b := []line{
		{2900, "job_triggered", 0, map[string]interface{}{"trigger": "schedule"}},
		{2910, "lock_acquired", 10, map[string]interface{}{"leaseMs": 2000, "fencingToken": 2}},
		{2912, "job_started", 12, nil},
		{3900, "lease_renewal", 1000, map[string]interface{}{"renewalOutcome": "success", "leaseMs": 2000}},
		{5312, "job_finished", 2412, map[string]interface{}{"status": "ok"}},
		{5315, "lock_released", 2415, map[string]interface{}{"released": true}},
	}

	fa, err := os.Create(filepath.Join(*out, "pod-a.jsonl"))
	if err != nil {
		panic(err)
	}
	defer fa.Close()
	if *fine {
		zerolog.TimeFieldFormat = zerolog.TimeFormatUnixMs
	}
	var now time.Time
	zerolog.TimestampFunc = func() time.Time { return now }
	za := zerolog.New(fa).With().Timestamp().Str("pod", "pod-a").Logger()
	for _, l := range a {
		now = at(l.atMs)
		e := za.Info().Str("jobId", "report-7").Str("executionId", "attempt-a").Str("event", l.event).
			Int64("elapsedMs", l.elapsed)
		for k, v := range l.extra {
			e = e.Interface(k, v)
		}
		e.Msg(l.event)
	}

	fb, err := os.Create(filepath.Join(*out, "pod-b.jsonl"))
	if err != nil {
		panic(err)
	}
	defer fb.Close()
	lb := logrus.New()
	lb.Out = fb
	f := &logrus.JSONFormatter{}
	if *fine {
		f.TimestampFormat = time.RFC3339Nano
	}
	lb.Formatter = f
	for _, l := range b {
		fields := logrus.Fields{"pod": "pod-b", "jobId": "report-7", "executionId": "attempt-b",
			"event": l.event, "elapsedMs": l.elapsed}
		for k, v := range l.extra {
			fields[k] = v
		}
		lb.WithTime(at(l.atMs)).WithFields(fields).Info(l.event)
	}
}
