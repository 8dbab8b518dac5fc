// Package checkpoint moves a job's checkpoints between the node-local
// directory its tasks write and the job's checkpoint store on shared
// storage, and answers the question a restart asks: which is the newest
// step that every rank has, whole?
//
// It is the part of checkpointing that the node agent drives. It knows
// nothing of gRPC, the controller or jobs: it is given directories, a step,
// a rank and a number of ranks, and touches nothing else.
//
// # Words
//
//   - Task: one rank of a job, on one node. Its $PHX_CKPT_DIR is a
//     node-local directory, called LOCAL below.
//   - Step: a checkpoint's number, chosen by the job (usually its training
//     step): an int64 >= 0, written in decimal without padding.
//   - Committed: a task has finished writing step N once LOCAL/N/.phx-complete
//     (Marker) exists; `phx ckpt commit N` creates it. Until then the step
//     is the task's, and nothing here reads it. Committed lists the
//     committed steps.
//   - Store: the job's --checkpoint-dir, a directory on shared storage that
//     every node of the job sees (STORE below). It must exist: Upload does
//     not create it, so that an unmounted file system is an error rather
//     than a checkpoint written to a node's local disk.
//   - Manifest: the list of one rank's files of one step, with their sizes,
//     SHA-256 sums and modes (MANIFEST.json).
//   - Complete: a rank's copy of a step is complete when its manifest
//     exists, parses, has ManifestVersion, and every file it lists exists
//     with the size it lists. A step is complete when ranks 0..ranks-1 all
//     are.
//   - Torn: a step that is not complete. Its upload crashed, was cancelled
//     or is still running, a rank never uploaded, a file was lost, or a
//     rank's copy was found corrupt when it was staged (CorruptMarker).
//
// # Layout
//
//	LOCAL/                     a task's $PHX_CKPT_DIR, on its node
//	    <N>/                   step N as the task wrote it
//	        .phx-complete      Marker: the task committed step N
//	        ...                the task's files and directories
//	STORE/                     the job's --checkpoint-dir, shared
//	    step-<N>/
//	        rank-<R>/
//	            ...            rank R's files of step N, as it wrote them
//	            MANIFEST.json  written last, atomically
//	            .phx-corrupt   CorruptMarker: staging found a file that does
//	                           not match the manifest (why, in one line)
//
// Names beginning ".phx-" (the Marker among them) are phalanx's own and
// are never copied. A task may not call a file MANIFEST.json or
// MANIFEST.json.tmp at the top of a step. Empty directories are not kept:
// a manifest lists files.
//
// # Upload
//
// Upload copies LOCAL/<N> to STORE/step-<N>/rank-<R>, hashing as it
// reads, no faster than WithRate allows. It syncs every file and
// directory, then writes the manifest: to a temporary name, synced,
// renamed into place, the directory synced. A crash at any point leaves
// the rank with no manifest, or with one whose files are all in place;
// there is no state between the two for a reader to mistake. Uploading a
// step the rank already has replaces it, so a torn upload is simply done
// again.
//
// # Restart
//
// Latest finds the newest complete step (at most upTo, when one is
// given), passing over torn ones and saying why. Complete is cheap, a stat
// per file and no reading, so every node that asks gets the same answer.
// Contents are checked when they are used: Stage copies one rank's files
// into a new directory, verifying each size and SHA-256 against the
// manifest; on a mismatch it removes what it wrote and fails, naming the
// step, the rank and the file.
//
// # Pruning
//
// Prune keeps the keep newest complete steps. It removes every step older
// than the oldest of those, torn or not, and nothing newer: a torn step
// newer than the newest complete one may be an upload in progress. A step
// wrongly judged torn (a storage error, say) can only make Prune remove
// less.
//
// # Trust
//
// A manifest is read from storage that jobs can write, so it is input, not
// truth. Every path must be relative, clean, free of "." and ".." elements
// and of phalanx's names; files are opened through os.Root, which refuses
// symbolic links that leave the rank's directory; modes are permission
// bits only; the step and rank must be those of the directory it is in. A
// manifest that breaks a rule makes its rank torn.
//
// In the other direction, Upload refuses symbolic links, devices, named
// pipes and sockets in a step, naming the file: a checkpoint is regular
// files in directories.
package checkpoint
