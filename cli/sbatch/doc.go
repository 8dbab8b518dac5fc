// Package sbatch turns an sbatch command line and its batch script into a
// job spec, without doing any I/O of its own: the caller passes the
// submitter's user, working directory, environment and a file reader.
//
// The rules follow Slurm's sbatch:
//
//   - The script must start with "#!". Directives are the "#SBATCH" lines
//     from line 2 on; scanning stops at the first line that is neither blank
//     nor a comment. "# SBATCH" and "##SBATCH" are plain comments.
//   - A directive's options are split like a shell would split them (quotes,
//     backslashes, and a word starting with # begins a comment).
//   - Directives are applied first, then the command line, so the command
//     line wins.
//   - Every option is spelled the same way in both places (-N2, -N 2,
//     --nodes=2, --nodes 2, unambiguous prefixes such as --part=gpu).
package sbatch
