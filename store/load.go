package store

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// load reads a database at the current schema version into a new state:
// everything but the records of finished jobs, of which it keeps the end
// times.
func load(db *bolt.DB, halfLife time.Duration) (*state, error) {
	st := newState(halfLife)
	err := db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		st.applied = getUint64(meta, keyApplied)
		st.nextJob = cluster.JobID(max(getUint64(meta, keyNextJob), 1))
		st.partsConfig = string(meta.Get(keyPartsConfig))
		for _, step := range []func(*bolt.Tx, *state) error{loadFeatures, loadJobs, loadHistory, loadNodes, loadPartitions, loadRequests, loadControllers, loadEvents} {
			if err := step(tx, st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

func loadJobs(tx *bolt.Tx, st *state) error {
	return tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
		id := cluster.JobID(binary.BigEndian.Uint64(k))
		var r statev1.Job
		if err := unmarshal(v, &r); err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		j, err := codec.FromJob(&r)
		if err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		if j.ID != id {
			return fmt.Errorf("job under key %d has ID %d", id, j.ID)
		}
		st.jobs[id] = j
		for i := range j.Attempts {
			if a := &j.Attempts[i]; a.Released() {
				st.recordHeld(j, a)
			}
		}
		if j.Array != nil {
			st.addArrayTask(id, j.Array.JobID)
		}
		st.active = append(st.active, j) // keys come in ID order
		st.indexLive(j)
		return nil
	})
}

func loadHistory(tx *bolt.Tx, st *state) error {
	return tx.Bucket(bucketHistory).ForEach(func(k, v []byte) error {
		id := cluster.JobID(binary.BigEndian.Uint64(k))
		var r statev1.Job
		if err := unmarshal(v, &r); err != nil {
			return fmt.Errorf("finished job %d: %w", id, err)
		}
		st.finished[id] = r.GetStatus().GetEndTime()
		loadHeld(st, id, &r)
		if base, ok := codec.ArrayBase(&r); ok {
			st.addArrayTask(id, base)
		}
		return nil
	})
}

// loadHeld records what the attempts of finished job r held, without
// decoding the rest of it.
func loadHeld(st *state, id cluster.JobID, r *statev1.Job) {
	j := &cluster.Job{ID: id, User: r.GetSpec().GetUser(), Account: r.GetSpec().GetAccount()}
	for _, ra := range r.GetStatus().GetAttempts() {
		a := cluster.Attempt{Alloc: codec.FromAllocation(ra.GetAlloc()), StartTime: codec.FromTime(ra.GetStartTime()), EndTime: codec.FromTime(ra.GetEndTime())}
		st.recordHeld(j, &a)
	}
}

func loadNodes(tx *bolt.Tx, st *state) error {
	return tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
		var r statev1.Node
		if err := unmarshal(v, &r); err != nil {
			return fmt.Errorf("node %q: %w", k, err)
		}
		n, err := codec.FromNode(&r)
		if err != nil {
			return fmt.Errorf("node %q: %w", k, err)
		}
		st.nodes[n.Name] = n
		st.nodeList = append(st.nodeList, n) // keys come in name order
		return nil
	})
}

func loadPartitions(tx *bolt.Tx, st *state) error {
	return tx.Bucket(bucketPartitions).ForEach(func(k, v []byte) error {
		var r statev1.Partition
		if err := unmarshal(v, &r); err != nil {
			return fmt.Errorf("partition %x: %w", k, err)
		}
		p, err := codec.FromPartition(&r)
		if err != nil {
			return fmt.Errorf("partition %q: %w", r.GetName(), err)
		}
		st.parts = append(st.parts, p)
		return nil
	})
}

func loadRequests(tx *bolt.Tx, st *state) error {
	return tx.Bucket(bucketRequests).ForEach(func(k, v []byte) error {
		var r statev1.SubmitRequest
		if err := unmarshal(v, &r); err != nil {
			return fmt.Errorf("request %x: %w", k, err)
		}
		req := request{job: cluster.JobID(r.GetJobId()), time: r.GetTime()}
		for _, id := range r.GetCancelled() {
			req.cancelled = append(req.cancelled, cluster.JobID(id))
		}
		st.requests[string(k)] = req
		return nil
	})
}

func loadControllers(tx *bolt.Tx, st *state) error {
	return tx.Bucket(bucketControllers).ForEach(func(k, v []byte) error {
		var r statev1.Controller
		if err := unmarshal(v, &r); err != nil {
			return fmt.Errorf("controller %q: %w", k, err)
		}
		st.ctls[r.GetId()] = Controller{ID: r.GetId(), APIAddr: r.GetApiAddr(), RaftAddr: r.GetRaftAddr()}
		return nil
	})
}
