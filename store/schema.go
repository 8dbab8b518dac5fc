package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Bucket and key names; see the package documentation for the layout.
var (
	bucketMeta        = []byte("meta")
	bucketJobs        = []byte("jobs")
	bucketHistory     = []byte("history")
	bucketPayloads    = []byte("payloads")
	bucketNodes       = []byte("nodes")
	bucketPartitions  = []byte("partitions")
	bucketRequests    = []byte("requests")
	bucketControllers = []byte("controllers")
	bucketEvents      = []byte("events")

	keyVersion   = []byte("version")
	keyApplied   = []byte("applied")
	keyNextJob   = []byte("nextjob")
	keyNextEvent = []byte("nextevent")
	// keyPartsConfig holds the digest of the config's partitions as last
	// applied (SetPartitions).
	keyPartsConfig = []byte("partsconfig")
)

// v2Buckets are the buckets of schema version 2.
var v2Buckets = [][]byte{
	bucketMeta, bucketJobs, bucketHistory, bucketPayloads, bucketNodes,
	bucketPartitions, bucketRequests, bucketControllers,
}

// SchemaVersion is the version this binary writes.
const SchemaVersion = 3

// migrations[v] brings a database at version v to version v+1. Version 0 is
// an empty file. A step never changes once released: a later format is a
// new step.
var migrations = []func(tx *bolt.Tx) error{
	0: createV1,
	1: migrateV1toV2,
	2: migrateV2toV3,
}

// migrateV2toV3 adds the bucket of node events, empty: nothing before
// version 3 recorded them. The first one recorded is number 1.
func migrateV2toV3(tx *bolt.Tx) error {
	_, err := tx.CreateBucket(bucketEvents)
	return err
}

// migrate runs the migrations from the database's version to SchemaVersion,
// each in its own transaction.
func migrate(db *bolt.DB) error {
	for {
		var v uint64
		if err := db.View(func(tx *bolt.Tx) error { v = version(tx); return nil }); err != nil {
			return err
		}
		switch {
		case v == SchemaVersion:
			return nil
		case v > SchemaVersion:
			return fmt.Errorf("state database has schema version %d, this binary understands up to %d: upgrade phalanx-controller (or restore a backup written by this version)", v, SchemaVersion)
		}
		err := db.Update(func(tx *bolt.Tx) error {
			if err := migrations[v](tx); err != nil {
				return err
			}
			return putUint64(tx.Bucket(bucketMeta), keyVersion, v+1)
		})
		if err != nil {
			return fmt.Errorf("migrate state database from version %d to %d: %w", v, v+1, err)
		}
	}
}

func version(tx *bolt.Tx) uint64 {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return 0
	}
	return getUint64(m, keyVersion)
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func putUint64(b *bolt.Bucket, key []byte, v uint64) error {
	return b.Put(key, u64(v))
}

func getUint64(b *bolt.Bucket, key []byte) uint64 {
	v := b.Get(key)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func jobKey(id cluster.JobID) []byte { return u64(uint64(id)) }

func seqKey(i int) []byte {
	key := make([]byte, 4)
	binary.BigEndian.PutUint32(key, uint32(i))
	return key
}

func putProto(b *bolt.Bucket, key []byte, m proto.Message) error {
	data, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

// getProto decodes the value under key into m; false if there is none.
func getProto(b *bolt.Bucket, key []byte, m proto.Message) (bool, error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	return true, proto.Unmarshal(data, m)
}

func unmarshal(data []byte, m proto.Message) error { return proto.Unmarshal(data, m) }
