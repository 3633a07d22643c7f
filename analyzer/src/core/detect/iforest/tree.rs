//! One isolation tree, grown as scikit-learn's `ExtraTreeRegressor` with
//! `max_features=1`: a random feature among those not constant in the node,
//! a threshold uniform between the node's minimum and maximum, values ≤ the
//! threshold to the left, until one sample is left or the depth limit.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::average_path_length;

#[derive(Debug, Clone, Copy)]
enum Node {
    Split {
        feature: u32,
        threshold: f64,
        left: u32,
        right: u32,
        size: u32,
    },
    Leaf {
        size: u32,
    },
}

#[derive(Debug, Clone)]
pub(super) struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    /// Grows a tree on `rows` (indices into `data`, a row-major matrix of
    /// width `width`).
    pub fn grow(
        data: &[f64],
        width: usize,
        rows: &mut [usize],
        max_depth: usize,
        rng: &mut ChaCha8Rng,
    ) -> Tree {
        let mut tree = Tree { nodes: Vec::new() };
        let mut features: Vec<usize> = (0..width).collect();
        tree.grow_node(data, width, rows, 0, max_depth, rng, &mut features);
        tree
    }

    #[allow(clippy::too_many_arguments)] // recursive helper over the build state
    fn grow_node(
        &mut self,
        data: &[f64],
        width: usize,
        rows: &mut [usize],
        depth: usize,
        max_depth: usize,
        rng: &mut ChaCha8Rng,
        features: &mut [usize],
    ) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(Node::Leaf {
            size: rows.len() as u32,
        });
        if rows.len() <= 1 || depth >= max_depth {
            return id;
        }
        // Draw features without replacement until one varies in this node.
        let mut remaining = features.len();
        let split = loop {
            if remaining == 0 {
                break None;
            }
            let pick = rng.random_range(0..remaining);
            features.swap(pick, remaining - 1);
            remaining -= 1;
            let f = features[remaining];
            let (lo, hi) = rows
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
                    let v = data[r * width + f];
                    (lo.min(v), hi.max(v))
                });
            if hi > lo {
                let mut t = lo + (hi - lo) * rng.random::<f64>();
                if t >= hi {
                    t = lo; // rounding reached hi: keep both sides non-empty
                }
                break Some((f, t));
            }
        };
        let Some((f, t)) = split else {
            return id;
        };
        // Partition in place: ≤ t first.
        let mut mid = 0;
        for i in 0..rows.len() {
            if data[rows[i] * width + f] <= t {
                rows.swap(i, mid);
                mid += 1;
            }
        }
        let (l, r) = rows.split_at_mut(mid);
        let left = self.grow_node(data, width, l, depth + 1, max_depth, rng, features);
        let right = self.grow_node(data, width, r, depth + 1, max_depth, rng, features);
        self.nodes[id as usize] = Node::Split {
            feature: f as u32,
            threshold: t,
            left,
            right,
            size: rows.len() as u32,
        };
        id
    }

    /// Path length of `x`: depth of its leaf plus c(leaf size).
    pub fn path_length(&self, x: &[f64]) -> f64 {
        let mut node = 0usize;
        let mut depth = 0usize;
        loop {
            match self.nodes[node] {
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                    ..
                } => {
                    node = if x[feature as usize] <= threshold {
                        left
                    } else {
                        right
                    } as usize;
                    depth += 1;
                }
                Node::Leaf { size } => {
                    return depth as f64 + average_path_length(size as usize);
                }
            }
        }
    }

    /// Calls `visit(feature, isolation)` for every split on `x`'s path, where
    /// isolation is ln(node size / size of the child `x` goes to): the share
    /// of the baseline that split separated from `x`, on a log scale, so the
    /// splits of one path add up to ln(ψ / leaf size).
    pub fn walk(&self, x: &[f64], mut visit: impl FnMut(usize, f64)) {
        let mut node = 0usize;
        while let Node::Split {
            feature,
            threshold,
            left,
            right,
            size,
        } = self.nodes[node]
        {
            node = if x[feature as usize] <= threshold {
                left
            } else {
                right
            } as usize;
            let child = match self.nodes[node] {
                Node::Split { size, .. } | Node::Leaf { size } => size,
            };
            visit(feature as usize, (size as f64 / child.max(1) as f64).ln());
        }
    }
}
