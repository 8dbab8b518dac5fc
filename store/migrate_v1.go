package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// Version 1 stored JSON of the in-memory structs of that release (decoded
// by codec.FromV1Job and friends), all jobs in one bucket with an index of
// the active ones:
//
//	meta/            version, applied, nextjob (as today)
//	jobs/<id>        JSON job (every job ever submitted)
//	active/<id>      ""  (jobs not terminal or still holding resources)
//	nodes/<name>     JSON node
//	partitions/<seq> JSON partition

var bucketV1Active = []byte("active")

// createV1 makes the buckets of version 1 in an empty database.
func createV1(tx *bolt.Tx) error {
	for _, b := range [][]byte{bucketMeta, bucketJobs, bucketV1Active, bucketNodes, bucketPartitions} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return putUint64(tx.Bucket(bucketMeta), keyNextJob, 1)
}

// migrateV1toV2 re-encodes every record as protobuf, splits each job's
// payload into payloads/, moves finished jobs to history/ and drops the
// active index (jobs/ is now the active set itself).
func migrateV1toV2(tx *bolt.Tx) error {
	var jobs []*cluster.Job
	err := tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
		j, err := codec.FromV1Job(v)
		if err != nil {
			return fmt.Errorf("job %d: %w", binary.BigEndian.Uint64(k), err)
		}
		jobs = append(jobs, j)
		return nil
	})
	if err != nil {
		return err
	}
	var nodes []*cluster.Node
	err = tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
		n, err := codec.FromV1Node(v)
		if err != nil {
			return fmt.Errorf("node %q: %w", k, err)
		}
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return err
	}
	var parts []*cluster.Partition
	err = tx.Bucket(bucketPartitions).ForEach(func(k, v []byte) error {
		p, err := codec.FromV1Partition(v)
		if err != nil {
			return fmt.Errorf("partition %x: %w", k, err)
		}
		parts = append(parts, p)
		return nil
	})
	if err != nil {
		return err
	}
	for _, b := range [][]byte{bucketJobs, bucketV1Active, bucketNodes, bucketPartitions} {
		if err := tx.DeleteBucket(b); err != nil {
			return err
		}
	}
	for _, b := range v2Buckets {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	for _, j := range jobs {
		if err := (putJobOp{j: j}).write(tx); err != nil {
			return err
		}
		payload, err := codec.PayloadBytes(j)
		if err != nil {
			return fmt.Errorf("job %d payload: %w", j.ID, err)
		}
		if err := (putPayloadOp{id: j.ID, payload: payload}).write(tx); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := (putNodeOp{n: n}).write(tx); err != nil {
			return err
		}
	}
	return partitionsOp{ps: parts}.write(tx)
}
