package schedtest

import (
	"fmt"

	"github.com/atom-sched/atom/pkg/structs"
)

// RackLevels are the topology levels Racks labels: block, then rack.
var RackLevels = []string{"block", "rack"}

// Racks labels nodes (in place) with a rack and a block, deterministically
// from their order: the nodes of each accelerator model (CPU nodes count
// as a model of their own), in order, fill racks of perRack nodes, and
// each model's racks blocks of perBlock racks. Rack and block names are
// numbered across models in the order each first fills: r0001, b001.
func Racks(nodes []*structs.Node, perRack, perBlock int) {
	type fill struct {
		rack, block     string
		inRack, inBlock int
	}
	byModel := map[string]*fill{}
	racks, blocks := 0, 0
	for _, n := range nodes {
		m := n.Capacity.AccelType
		if n.Capacity.Accels == 0 {
			m = ""
		}
		f := byModel[m]
		if f == nil || f.inRack == perRack {
			if f == nil || f.inBlock == perBlock {
				blocks++
				f = &fill{block: fmt.Sprintf("b%03d", blocks)}
				byModel[m] = f
			}
			racks++
			f.rack, f.inRack = fmt.Sprintf("r%04d", racks), 0
			f.inBlock++
		}
		f.inRack++
		if n.Tags == nil {
			n.Tags = map[string]string{}
		}
		n.Tags["rack"], n.Tags["block"] = f.rack, f.block
	}
}
