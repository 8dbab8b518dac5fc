package codec

import (
	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// placedBys maps how an attempt was placed to its persisted form; unknown
// is persisted as unspecified, which records and commands written before
// the field read as.
var placedBys = newTable(map[cluster.PlacedBy]statev1.PlacedBy{
	cluster.PlacedMain:     statev1.PlacedBy_PLACED_BY_MAIN,
	cluster.PlacedBackfill: statev1.PlacedBy_PLACED_BY_BACKFILL,
})

// PlacedBy encodes how an attempt was placed.
func PlacedBy(b cluster.PlacedBy) statev1.PlacedBy { return placedBys.encode(b) }

// FromPlacedBy decodes it; a value this version does not know is unknown.
func FromPlacedBy(p statev1.PlacedBy) cluster.PlacedBy { return placedBys.decode(p) }
