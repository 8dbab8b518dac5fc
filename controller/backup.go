package controller

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/raft"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store"
)

// Backup and restore. A backup is the state database as Snapshot writes it:
// every job (active and finished), node, partition and controller record,
// with the Raft index it reflects. Restoring one hands it to Raft as a user
// snapshot (raft.Restore): the leader takes it at an index above both the
// backup's and its own log, leaving a hole in the log, so every follower,
// and any replica that joins later, receives it as a snapshot. It is for
// disaster recovery into a new cluster, which is why it refuses a state
// that holds jobs unless forced.

// backupChunk is the size of the pieces a backup is streamed in.
const backupChunk = 1 << 20

// restoreTimeout bounds the wait for Raft to take a restore in hand (it
// then finishes, however long the copy takes).
const restoreTimeout = time.Minute

func (c *controllerService) Backup(req *phalanxv1.BackupRequest, stream phalanxv1.ControllerService_BackupServer) error {
	return toStatus(c.s.backup(stream))
}

// backup copies the state to a file beside it, then streams the file: the
// database's read transaction lasts as long as a local copy takes, never as
// long as a slow client, which would hold the database's mmap lock and
// stall the state writer, and with it the replica's applies.
func (s *Server) backup(stream phalanxv1.ControllerService_BackupServer) error {
	f, err := os.CreateTemp(s.cfg.DataDir, "backup-*.db")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := s.store.Snapshot(f); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	w := bufio.NewWriterSize(chunkWriter{stream}, backupChunk)
	if _, err := io.Copy(w, f); err != nil {
		return err
	}
	return w.Flush()
}

// chunkWriter sends what is written as Chunk messages.
type chunkWriter struct {
	stream phalanxv1.ControllerService_BackupServer
}

func (w chunkWriter) Write(p []byte) (int, error) {
	if err := w.stream.Send(&phalanxv1.Chunk{Data: p}); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *controllerService) Restore(stream phalanxv1.ControllerService_RestoreServer) error {
	resp, err := c.s.restore(stream)
	if err != nil {
		return toStatus(err)
	}
	return stream.SendAndClose(resp)
}

func (s *Server) restore(stream phalanxv1.ControllerService_RestoreServer) (*phalanxv1.RestoreResponse, error) {
	first, err := stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	// Refused before anything is written: a restore replaces everything.
	if active, finished, _ := s.store.Counts(); active+finished > 0 && !first.Force {
		return nil, cluster.Errorf(cluster.ErrConflict,
			"this cluster holds %d jobs: restoring a backup replaces everything; restore into a new cluster, or force it", active+finished)
	}
	f, err := os.CreateTemp(s.cfg.DataDir, "restore-*.db")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	for msg := first; ; {
		if _, err := f.Write(msg.Data); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		if msg, err = stream.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
	}
	backup, err := inspectBackup(f.Name())
	if err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, err
	}
	members := s.store.Controllers() // this cluster's replicas, not the backup's
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: backup.applied, Size: size}
	if err := s.raft.raft.Restore(meta, f, restoreTimeout); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, s.notLeader()
		}
		return nil, fmt.Errorf("restore: %w", err)
	}
	s.log.Warn("state replaced by a backup", "jobs", backup.jobs, "nodes", backup.nodes, "backup_index", backup.applied)
	// The state is replaced whether or not the client still waits: finish
	// the follow-up on a context of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stream.Context()), membershipTimeout)
	defer cancel()
	s.afterRestore(ctx, members)
	return &phalanxv1.RestoreResponse{Jobs: uint64(backup.jobs), Nodes: uint64(backup.nodes)}, nil
}

// afterRestore brings the leader's own memory in line with the restored
// state: job IDs go on after the restored ones, every node gets a full TTL
// of grace (as after an election), and the replicas recorded are this
// cluster's, not those of the cluster the backup came from, so that
// forwarding and scontrol show controllers reach the right addresses.
func (s *Server) afterRestore(ctx context.Context, members []store.Controller) {
	s.mu.Lock()
	if s.nextID != 0 {
		s.nextID = max(s.nextID, s.store.NextJobID())
		s.startLivenessTerm()
	}
	s.mu.Unlock()
	keep := map[string]bool{}
	for _, m := range members {
		keep[m.ID] = true
		if have, ok := s.store.Controller(m.ID); !ok || have != m {
			if _, err := s.propose(ctx, fsm.SetController{Controller: m}); err != nil {
				s.log.Warn("record this cluster's controllers after a restore", "id", m.ID, "err", err)
			}
		}
	}
	for _, c := range s.store.Controllers() {
		if !keep[c.ID] {
			if _, err := s.propose(ctx, fsm.RemoveController{ID: c.ID}); err != nil {
				s.log.Warn("forget the backup's controllers after a restore", "id", c.ID, "err", err)
			}
		}
	}
	s.kickScheduler()
}

type backupInfo struct {
	applied     uint64
	jobs, nodes int
}

// inspectBackup checks a backup whole (store.VerifyBackup), then opens a
// copy of it (migrating it if it is from an older version) to read what it
// holds.
func inspectBackup(path string) (backupInfo, error) {
	if err := store.VerifyBackup(path); err != nil {
		return backupInfo{}, cluster.Errorf(cluster.ErrInvalid, "not restored: %v", err)
	}
	cp := path + ".check"
	defer os.Remove(cp)
	if err := copyFile(path, cp); err != nil {
		return backupInfo{}, err
	}
	st, err := store.Open(cp, store.NoSync())
	if err != nil {
		if cause := errors.Unwrap(err); cause != nil { // without the name of this replica's copy
			err = cause
		}
		return backupInfo{}, cluster.Errorf(cluster.ErrInvalid, "not restored: %v", err)
	}
	defer st.Close()
	active, finished, _ := st.Counts()
	return backupInfo{applied: st.AppliedIndex(), jobs: active + finished, nodes: len(st.Nodes())}, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
