package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Bucket and key names; see the package documentation for the layout.
var (
	bucketMeta       = []byte("meta")
	bucketJobs       = []byte("jobs")
	bucketActive     = []byte("active")
	bucketNodes      = []byte("nodes")
	bucketPartitions = []byte("partitions")

	keyVersion = []byte("version")
	keyApplied = []byte("applied")
	keyNextJob = []byte("nextjob")
)

// schemaVersion is the version this binary writes.
const schemaVersion = 1

// migrations[v] brings a database at version v to version v+1. Version 0 is
// an empty file.
var migrations = []func(tx *bolt.Tx) error{
	0: func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketJobs, bucketActive, bucketNodes, bucketPartitions} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return putUint64(tx.Bucket(bucketMeta), keyNextJob, 1)
	},
}

// migrate runs the migrations from the database's version to schemaVersion,
// each in its own transaction.
func migrate(db *bolt.DB) error {
	for {
		var v uint64
		if err := db.View(func(tx *bolt.Tx) error { v = version(tx); return nil }); err != nil {
			return err
		}
		switch {
		case v == schemaVersion:
			return nil
		case v > schemaVersion:
			return fmt.Errorf("state database has schema version %d, this binary understands up to %d: upgrade phalanx-controller", v, schemaVersion)
		}
		err := db.Update(func(tx *bolt.Tx) error {
			if err := migrations[v](tx); err != nil {
				return err
			}
			return putUint64(tx.Bucket(bucketMeta), keyVersion, v+1)
		})
		if err != nil {
			return fmt.Errorf("migrate state database from version %d: %w", v, err)
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

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

// getJob decodes the job with the given ID; nil if there is none.
func getJob(tx *bolt.Tx, id cluster.JobID) (*cluster.Job, error) {
	data := tx.Bucket(bucketJobs).Get(jobKey(id))
	if data == nil {
		return nil, nil
	}
	var j cluster.Job
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("decode job %d: %w", id, err)
	}
	return &j, nil
}

// putJob writes a job and keeps the active index in step: a job is active
// while it is not terminal or still holds resources.
func putJob(tx *bolt.Tx, j *cluster.Job) error {
	key := jobKey(j.ID)
	if err := putJSON(tx.Bucket(bucketJobs), key, j); err != nil {
		return fmt.Errorf("encode job %d: %w", j.ID, err)
	}
	active := tx.Bucket(bucketActive)
	if isActive(j) {
		return active.Put(key, nil)
	}
	return active.Delete(key)
}

func isActive(j *cluster.Job) bool { return !j.State.Terminal() || j.Live() }

// activeJobs decodes every active job, by ID.
func activeJobs(tx *bolt.Tx) ([]*cluster.Job, error) {
	var out []*cluster.Job
	err := tx.Bucket(bucketActive).ForEach(func(k, _ []byte) error {
		id := cluster.JobID(binary.BigEndian.Uint64(k))
		j, err := getJob(tx, id)
		if err != nil {
			return err
		}
		if j == nil {
			return fmt.Errorf("active index names job %d, which does not exist", id)
		}
		out = append(out, j)
		return nil
	})
	return out, err
}
