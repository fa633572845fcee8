"""The workflow's nodes as a server-rendered SVG (like ``console.charts``): one box
per node in stage order, left to right, coloured by status through CSS classes
(``node-<status>``, so the light and dark themes both read), and each handoff an
arrow from its source to its target node labelled with its classification.

Several nodes of one stage (dynamic topology) stack in that stage's column. The
template draws the geometry; the accessible list beside it says the same in text.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.routed.records import HandoffEnvelope, PipelineNode, Stored

BOX_W, BOX_H = 150, 46
GAP_X, GAP_Y = 60, 18
PAD = 10


@dataclass(frozen=True, slots=True)
class Box:
    node_id: str
    x: int
    y: int
    label: str
    version: str
    status: str  # the status name, lower case: the CSS class suffix
    stage: int

    @property
    def cx(self) -> int:
        return self.x + BOX_W // 2


@dataclass(frozen=True, slots=True)
class Edge:
    x1: int
    y1: int
    x2: int
    y2: int
    classification: str
    handoff_id: str

    @property
    def mid_x(self) -> int:
        return (self.x1 + self.x2) // 2

    @property
    def mid_y(self) -> int:
        return (self.y1 + self.y2) // 2 - 6


@dataclass(frozen=True, slots=True)
class NodeGraph:
    boxes: list[Box]
    edges: list[Edge]
    width: int
    height: int
    box_w: int = BOX_W
    box_h: int = BOX_H


def node_graph(nodes: list[Stored[PipelineNode]], handoffs: list[HandoffEnvelope]) -> NodeGraph:
    stages = sorted({n.record.stage_order for n in nodes})
    column = {stage: i for i, stage in enumerate(stages)}
    rows_in: dict[int, int] = {}
    boxes: dict[str, Box] = {}
    for n in sorted(nodes, key=lambda n: (n.record.stage_order, n.record.created_at)):
        node = n.record
        col = column[node.stage_order]
        row = rows_in.get(col, 0)
        rows_in[col] = row + 1
        boxes[node.node_id] = Box(
            node_id=node.node_id,
            x=PAD + col * (BOX_W + GAP_X),
            y=PAD + row * (BOX_H + GAP_Y),
            label=node.package_name,
            version=node.package_version,
            status=node.status.name.lower(),
            stage=node.stage_order,
        )
    edges = []
    for h in handoffs:
        source, target = boxes.get(h.source_node_id), boxes.get(h.target_node_id)
        if source is None or target is None:
            continue  # a handoff naming a node of another workflow is not drawn
        edges.append(
            Edge(
                x1=source.x + BOX_W,
                y1=source.y + BOX_H // 2,
                x2=target.x,
                y2=target.y + BOX_H // 2,
                classification=h.classification.name.lower(),
                handoff_id=h.handoff_id,
            )
        )
    width = PAD * 2 + max(1, len(stages)) * (BOX_W + GAP_X) - GAP_X
    height = PAD * 2 + max([1, *rows_in.values()]) * (BOX_H + GAP_Y) - GAP_Y
    return NodeGraph(list(boxes.values()), edges, width, height)
