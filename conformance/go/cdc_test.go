package conformance

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	scyllacdc "github.com/scylladb/scylla-cdc-go"
)

// change is one write as the test made it, or one delta row as scylla-cdc-go delivered it.
type change struct {
	op scyllacdc.OperationType
	ck int
	// v and n are nil when the change does not set them.
	v *string
	n *int64
}

func (c change) String() string {
	v, n := "null", "null"
	if c.v != nil {
		v = fmt.Sprintf("%q", *c.v)
	}
	if c.n != nil {
		n = fmt.Sprint(*c.n)
	}
	return fmt.Sprintf("%v(ck=%d v=%s n=%s)", c.op, c.ck, v, n)
}

// writer writes changes with strictly increasing timestamps (two writes to one partition
// must not share a timestamp, or their order in the log is the order of random bits).
type writer struct {
	t       *testing.T
	session *gocql.Session
	last    int64
	// written changes per partition key, in write order.
	written map[int][]change
	// time of the last write.
	lastWrite time.Time
}

func (w *writer) exec(pk int, c change, stmt string, values ...interface{}) {
	w.t.Helper()
	ts := time.Now().UnixMicro()
	if ts <= w.last {
		ts = w.last + 1
	}
	w.last = ts
	if err := w.session.Query(stmt, values...).WithTimestamp(ts).Exec(); err != nil {
		w.t.Fatalf("%s %v: %v", stmt, values, err)
	}
	w.written[pk] = append(w.written[pk], c)
	w.lastWrite = time.UnixMicro(ts)
}

// phase writes, for each partition: an insert, an update, a second insert and a row delete.
func (w *writer) phase(phase int, partitions int) {
	w.t.Helper()
	str := func(s string) *string { return &s }
	num := func(n int64) *int64 { return &n }
	for pk := 0; pk < partitions; pk++ {
		ck := phase * 10
		ins := fmt.Sprintf("p%d-pk%d-insert", phase, pk)
		w.exec(pk, change{op: scyllacdc.Insert, ck: ck, v: str(ins), n: num(int64(pk*100 + phase))},
			"INSERT INTO ks.t (pk, ck, v, n) VALUES (?, ?, ?, ?)", pk, ck, ins, int64(pk*100+phase))
		upd := fmt.Sprintf("p%d-pk%d-update", phase, pk)
		w.exec(pk, change{op: scyllacdc.Update, ck: ck, v: str(upd)},
			"UPDATE ks.t SET v = ? WHERE pk = ? AND ck = ?", upd, pk, ck)
		w.exec(pk, change{op: scyllacdc.Insert, ck: ck + 1, v: str("doomed"), n: num(-1)},
			"INSERT INTO ks.t (pk, ck, v, n) VALUES (?, ?, ?, ?)", pk, ck+1, "doomed", int64(-1))
		w.exec(pk, change{op: scyllacdc.RowDelete, ck: ck + 1},
			"DELETE FROM ks.t WHERE pk = ? AND ck = ?", pk, ck+1)
	}
}

// delivered collects what scylla-cdc-go hands to the consumers.
type delivered struct {
	mu sync.Mutex
	// per partition key, in delivery order.
	changes map[int][]change
	// stream and time of every delivered change, per partition key.
	streams map[int][]string
	times   map[int][]int64
}

func (d *delivered) consume(_ context.Context, _ string, c scyllacdc.Change) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, row := range c.Delta {
		pk := intValue(row, "pk")
		got := change{op: row.GetOperation(), ck: intValue(row, "ck")}
		if v, ok := row.GetValue("v"); ok {
			got.v, _ = v.(*string)
		}
		if n, ok := row.GetValue("n"); ok {
			got.n, _ = n.(*int64)
		}
		d.changes[pk] = append(d.changes[pk], got)
		d.streams[pk] = append(d.streams[pk], hex.EncodeToString(c.StreamID))
		d.times[pk] = append(d.times[pk], c.GetCassandraTimestamp())
	}
	return nil
}

func (d *delivered) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.changes {
		n += len(c)
	}
	return n
}

func intValue(row *scyllacdc.ChangeRow, column string) int {
	v, ok := row.GetValue(column)
	if !ok {
		return -1
	}
	if p, ok := v.(*int); ok && p != nil {
		return *p
	}
	return -1
}

// readerLog is scylla-cdc-go's log: $CONFORMANCE_LOGS/<test>.reader.log, or nowhere.
func readerLog(t *testing.T) *log.Logger {
	dir := os.Getenv("CONFORMANCE_LOGS")
	if dir == "" {
		return log.New(io.Discard, "", 0)
	}
	f, err := os.Create(filepath.Join(dir, t.Name()+".reader.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return log.New(f, "", log.Lmicroseconds)
}

// generationStreams reads the stream ids of the vnode generation starting at ts.
func generationStreams(t *testing.T, session *gocql.Session, ts time.Time) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	iter := session.Query("SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?", ts).
		Consistency(gocql.Quorum).Iter()
	var streams [][]byte
	for iter.Scan(&streams) {
		for _, s := range streams {
			out[hex.EncodeToString(s)] = true
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScyllaCDCGoReadsEveryChangeAcrossAGenerationChange writes changes, adds a node (a new
// CDC generation), writes more changes into the new generation, then reads the log with
// scylla-cdc-go from before the first write to after the last and checks that every change
// arrived once, with its values, in write order per partition, each from a stream of the
// generation it was written in.
func TestScyllaCDCGoReadsEveryChangeAcrossAGenerationChange(t *testing.T) {
	const first = "127.0.50.1"
	const generationDelay = 4 * time.Second
	const partitions = 12
	e := startEmulator(t, first, 3, generationDelay)
	session := connect(t, e)
	start := time.Now()

	run(t, session, "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3} AND tablets = {'enabled': false}")
	run(t, session, "CREATE TABLE ks.t (pk int, ck int, v text, n bigint, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
	if err := session.AwaitSchemaAgreement(t.Context()); err != nil {
		t.Fatal(err)
	}
	var firstGeneration time.Time
	if err := session.Query("SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'").
		Consistency(gocql.Quorum).Scan(&firstGeneration); err != nil {
		t.Fatal(err)
	}

	w := &writer{t: t, session: session, written: map[int][]change{}}
	w.phase(1, partitions)
	phaseOneEnd := w.lastWrite

	// A fourth node joins: a new generation starts generationDelay later.
	reply := e.command(t, "add-node")
	var ms int64
	if _, err := fmt.Sscan(reply, &ms); err != nil {
		t.Fatalf("add-node answered %q", reply)
	}
	secondGeneration := time.UnixMilli(ms)
	if !secondGeneration.After(phaseOneEnd) {
		t.Fatalf("the new generation (%v) starts before the last write (%v)", secondGeneration, phaseOneEnd)
	}
	// Wait until the new generation is published and operating.
	deadline := time.Now().Add(generationDelay + 30*time.Second)
	for {
		var count int
		err := session.Query("SELECT COUNT(*) FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'").
			Consistency(gocql.Quorum).Scan(&count)
		if err == nil && count == 2 && time.Now().After(secondGeneration.Add(100*time.Millisecond)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second generation is not operating (count %d, err %v)", count, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hosts := len(session.GetHosts()); hosts != 3 && hosts != 4 {
		t.Errorf("gocql sees %d hosts", hosts)
	}
	w.phase(2, partitions)

	got := &delivered{changes: map[int][]change{}, streams: map[int][]string{}, times: map[int][]int64{}}
	reader, err := scyllacdc.NewReader(t.Context(), &scyllacdc.ReaderConfig{
		Session:               session,
		TableNames:            []string{"ks.t"},
		ChangeConsumerFactory: scyllacdc.MakeChangeConsumerFactoryFromFunc(got.consume),
		Logger:                readerLog(t),
		Advanced: scyllacdc.AdvancedReaderConfig{
			ConfidenceWindowSize:        time.Second,
			QueryTimeWindowSize:         5 * time.Second,
			PostNonEmptyQueryDelay:      200 * time.Millisecond,
			PostEmptyQueryDelay:         200 * time.Millisecond,
			PostFailedQueryDelay:        200 * time.Millisecond,
			MaxPostFailedQueryDelay:     time.Second,
			PostGenerationFetchDelay:    500 * time.Millisecond,
			MaxPostGenerationFetchDelay: time.Second,
			// Read from before the keyspace was created.
			ChangeAgeLimit: time.Since(start) + 5*time.Second,
		},
	})
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	// Stop at one second after the last write, once reading is under way (StopAt before
	// Run may stop the generation fetcher before it hands over the first generation).
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- reader.Run(ctx) }()
	total := 0
	for _, c := range w.written {
		total += len(c)
	}
	waitDeadline := time.Now().Add(2 * time.Minute)
	for got.count() < total && time.Now().Before(waitDeadline) {
		select {
		case err := <-done:
			t.Fatalf("the reader stopped early (%d of %d changes): %v", got.count(), total, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	reader.StopAt(w.lastWrite.Add(time.Second))
	if err := <-done; err != nil {
		t.Fatalf("reader: %v", err)
	}

	firstStreams := generationStreams(t, session, firstGeneration)
	secondStreams := generationStreams(t, session, secondGeneration)
	if len(firstStreams) == 0 || len(secondStreams) == 0 {
		t.Fatalf("streams: %d in the first generation, %d in the second", len(firstStreams), len(secondStreams))
	}
	for pk := 0; pk < partitions; pk++ {
		want, have := w.written[pk], got.changes[pk]
		if fmt.Sprint(want) != fmt.Sprint(have) {
			t.Errorf("partition %d:\nwritten   %v\ndelivered %v", pk, want, have)
			continue
		}
		for i, stream := range got.streams[pk] {
			ts := time.UnixMicro(got.times[pk][i])
			inSecond := !ts.Before(secondGeneration)
			if inSecond && !secondStreams[stream] || !inSecond && !firstStreams[stream] {
				t.Errorf("partition %d change %d at %v came from stream %s of the wrong generation", pk, i, ts, stream)
			}
		}
	}
	if extra := len(got.changes) - partitions; extra > 0 {
		t.Errorf("%d unexpected partitions delivered: %v", extra, got.changes)
	}
}
