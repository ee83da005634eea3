package conformance

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// TestGocqlSeesTheClusterAndRoutesByToken connects with gocql's defaults and checks what it
// learned: every node with its data center, rack, host id, shard count and tokens; the
// schema metadata of a CDC table (DESCRIBE KEYSPACE ... WITH INTERNALS included); and that
// its token-aware routing sends each partition's query to the node that owns the token the
// server computes for it.
func TestGocqlSeesTheClusterAndRoutesByToken(t *testing.T) {
	const first = "127.0.51.1"
	e := startEmulator(t, first, 3, 2*time.Second)
	session := connect(t, e)

	expected := map[string]bool{}
	for i := 1; i <= 3; i++ {
		expected[nodeIP(t, first, i)] = true
	}
	hosts := session.GetHosts()
	if len(hosts) != 3 {
		t.Fatalf("gocql sees %d hosts, want 3: %v", len(hosts), hosts)
	}
	owner := map[int64]string{}
	var ring []int64
	ids := map[string]bool{}
	for _, h := range hosts {
		addr := h.ConnectAddress().String()
		if !expected[addr] {
			t.Errorf("unexpected host address %s", addr)
		}
		if h.Port() != e.port {
			t.Errorf("%s: port %d, want %d", addr, h.Port(), e.port)
		}
		if h.DataCenter() != "datacenter1" || h.Rack() != "rack1" {
			t.Errorf("%s: dc %q rack %q", addr, h.DataCenter(), h.Rack())
		}
		if h.HostID() == "" || ids[h.HostID()] {
			t.Errorf("%s: host id %q missing or repeated", addr, h.HostID())
		}
		ids[h.HostID()] = true
		if !h.IsUp() {
			t.Errorf("%s is not up", addr)
		}
		if n := h.ScyllaShardCount(); n != 2 {
			t.Errorf("%s: %d shards, want 2", addr, n)
		}
		if h.ScyllaShardAwarePort() == 0 {
			t.Errorf("%s: no shard-aware port", addr)
		}
		if p := h.Partitioner(); p != "" && p != "org.apache.cassandra.dht.Murmur3Partitioner" {
			t.Errorf("%s: partitioner %q", addr, p)
		}
		if len(h.Tokens()) != 16 {
			t.Errorf("%s: %d tokens, want 16", addr, len(h.Tokens()))
		}
		for _, tok := range h.Tokens() {
			v, err := strconv.ParseInt(tok, 10, 64)
			if err != nil {
				t.Fatalf("%s: token %q: %v", addr, tok, err)
			}
			owner[v] = addr
			ring = append(ring, v)
		}
	}
	sort.Slice(ring, func(i, j int) bool { return ring[i] < ring[j] })

	// One connection per shard to every node (the shard-aware port works).
	deadline := time.Now().Add(20 * time.Second)
	for {
		missing := 0
		session.IterateHostPools(func(p gocql.HostPoolInfo) bool {
			if p.GetConnectionCount() < p.GetShardCount() {
				missing++
			}
			return true
		})
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d host pools still lack a connection per shard", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}

	run(t, session, "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'enabled': false}")
	run(t, session, "CREATE TYPE ks.point (x int, y int)")
	run(t, session, "CREATE TABLE ks.t (pk int, ck text, v frozen<point>, l list<bigint>, PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {'enabled': true, 'ttl': 600}")
	if err := session.AwaitSchemaAgreement(t.Context()); err != nil {
		t.Fatal(err)
	}

	ks, err := session.KeyspaceMetadata("ks")
	if err != nil {
		t.Fatalf("keyspace metadata: %v", err)
	}
	if ks.StrategyClass != "org.apache.cassandra.locator.NetworkTopologyStrategy" || !ks.DurableWrites {
		t.Errorf("keyspace: %q durable %v", ks.StrategyClass, ks.DurableWrites)
	}
	if _, ok := ks.Types["point"]; !ok {
		t.Errorf("type point missing: %v", ks.Types)
	}
	for _, name := range []string{"t", "t_scylla_cdc_log"} {
		if _, ok := ks.Tables[name]; !ok {
			t.Errorf("table %s missing from metadata", name)
		}
	}
	// gocql reads the keyspace's CREATE statements with DESCRIBE KEYSPACE ... WITH INTERNALS.
	for _, want := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'datacenter1': '1'}",
		"CREATE TYPE ks.point (",
		"CREATE TABLE ks.t (",
		"ALTER TABLE ks.t_scylla_cdc_log WITH ",
		"AND cdc = {'delta': 'full', 'enabled': 'true', 'postimage': 'false', 'preimage': 'false', 'ttl': '600'}",
	} {
		if !strings.Contains(ks.CreateStmts, want) {
			t.Errorf("CreateStmts lacks %q:\n%s", want, ks.CreateStmts)
		}
	}
	table, err := session.TableMetadata("ks", "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(table.PartitionKey) != 1 || table.PartitionKey[0].Name != "pk" || table.PartitionKey[0].Type != "int" {
		t.Errorf("partition key: %+v", table.PartitionKey)
	}
	// Scylla writes system_schema.columns.clustering_order upper-case ("DESC": db/schema_tables.cc,
	// scylladb/scylladb#8477); gocql derives `Order` by comparing with lower-case "desc", so against
	// Scylla it reports ASC for every column. The raw value is what gocql read from the server.
	if len(table.ClusteringColumns) != 1 || table.ClusteringColumns[0].Name != "ck" || table.ClusteringColumns[0].ClusteringOrder != "DESC" {
		t.Errorf("clustering: %+v", table.ClusteringColumns)
	}
	wantTypes := map[string]string{"pk": "int", "ck": "text", "v": "frozen<point>", "l": "list<bigint>"}
	for name, typ := range wantTypes {
		c, ok := table.Columns[name]
		if !ok || c.Type != typ {
			t.Errorf("column %s: %+v, want type %s", name, c, typ)
		}
	}
	// The CDC options are the `cdc` schema extension (system_schema.scylla_tables.cdc stays
	// empty on Scylla since 4.0, so gocql's Options.CDC is empty there too).
	if _, ok := table.Extensions["cdc"]; !ok {
		t.Errorf("no cdc extension: %v", table.Extensions)
	}
	logTable, err := session.TableMetadata("ks", "t_scylla_cdc_log")
	if err != nil {
		t.Fatal(err)
	}
	if logTable.Options.Partitioner != "com.scylladb.dht.CDCPartitioner" {
		t.Errorf("log partitioner %q", logTable.Options.Partitioner)
	}

	// Token-aware routing: the coordinator of each single-partition query owns the token
	// the server computes for the key (RF 1: the only replica).
	insert := session.Query("INSERT INTO ks.t (pk, ck, v, l) VALUES (?, ?, ?, ?)")
	for pk := 0; pk < 40; pk++ {
		if err := insert.Bind(pk, "a", map[string]interface{}{"x": pk, "y": -pk}, []int64{int64(pk)}).Exec(); err != nil {
			t.Fatalf("insert %d: %v", pk, err)
		}
	}
	for pk := 0; pk < 40; pk++ {
		var token int64
		iter := session.Query("SELECT token(pk) FROM ks.t WHERE pk = ?", pk).Consistency(gocql.One).Iter()
		if !iter.Scan(&token) {
			t.Fatalf("token(%d): %v", pk, iter.Close())
		}
		coordinator := iter.Host()
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		i := sort.Search(len(ring), func(i int) bool { return ring[i] >= token })
		if i == len(ring) {
			i = 0
		}
		if got, want := coordinator.ConnectAddress().String(), owner[ring[i]]; got != want {
			t.Errorf("pk %d (token %d) was sent to %s, its owner is %s", pk, token, got, want)
		}
	}
	// The rows read back as written.
	var v map[string]interface{}
	var l []int64
	if err := session.Query("SELECT v, l FROM ks.t WHERE pk = 7 AND ck = 'a'").Scan(&v, &l); err != nil {
		t.Fatal(err)
	}
	if v["x"] != 7 || v["y"] != -7 || len(l) != 1 || l[0] != 7 {
		t.Errorf("read back v=%v l=%v", v, l)
	}
}
