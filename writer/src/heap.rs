//! The object reference graph of a live heap (`jlive ctl heap FILE`), and its summary
//! (`jlive stats FILE`): objects and bytes by class, and the largest retainers.
//!
//! ```text
//! file   := "JLHEAP" version:u8 (1) flags:u8 (0)
//!           count:varint  class*    class  := length:varint name:UTF-8 (internal form:
//!                                             java/lang/String, [I, [Ljava/lang/Object;)
//!           count:varint  object*   object := id:varint class:varint size:varint length+1:varint
//!                                             (class: index into the classes; size in bytes;
//!                                              length 0 = not an array)
//!           count:varint  ref*      ref    := from:varint to:varint kind:u8
//!           count:varint  root*     root   := kind:u8 to:varint
//! varint := unsigned LEB128
//! ```
//! Objects are listed once, in the order the walk reached them; a Class object's class is
//! java/lang/Class. Kinds are JVMTI's jvmtiHeapReferenceKind: from an object 1 class,
//! 2 field, 3 array element, 4 class loader, 5 signers, 6 protection domain, 7 interface,
//! 8 static field, 9 constant pool, 10 superclass; roots 21 JNI global, 22 system class,
//! 23 monitor, 24 stack local, 25 JNI local, 26 thread, 27 other.

use std::collections::HashMap;
use std::io::{self, Write};

pub const MAGIC: &[u8; 6] = b"JLHEAP";
pub const VERSION: u8 = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    pub classes: Vec<String>,
    pub objects: Vec<Object>,
    pub refs: Vec<Ref>,
    pub roots: Vec<Root>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Object {
    pub id: u64,
    pub class: u32,
    pub size: u64,
    /// -1: not an array.
    pub length: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ref {
    pub from: u64,
    pub to: u64,
    pub kind: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Root {
    pub kind: u8,
    pub to: u64,
}

/// The reference kinds a Java program writes itself: instance fields, array elements and
/// static fields (what VA/Java's field report lists).
pub fn is_field(kind: u8) -> bool {
    matches!(kind, 2 | 3 | 8)
}

fn varint(w: &mut impl Write, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 10];
    let mut n = 0;
    loop {
        let byte = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            buf[n] = byte;
            n += 1;
            break;
        }
        buf[n] = byte | 0x80;
        n += 1;
    }
    w.write_all(&buf[..n])
}

/// Writes a graph in the layout above.
pub fn write(g: &Graph, w: &mut impl Write) -> io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&[VERSION, 0])?;
    varint(w, g.classes.len() as u64)?;
    for c in &g.classes {
        varint(w, c.len() as u64)?;
        w.write_all(c.as_bytes())?;
    }
    varint(w, g.objects.len() as u64)?;
    for o in &g.objects {
        varint(w, o.id)?;
        varint(w, u64::from(o.class))?;
        varint(w, o.size)?;
        varint(w, (i64::from(o.length) + 1).max(0) as u64)?;
    }
    varint(w, g.refs.len() as u64)?;
    for r in &g.refs {
        varint(w, r.from)?;
        varint(w, r.to)?;
        w.write_all(&[r.kind])?;
    }
    varint(w, g.roots.len() as u64)?;
    for r in &g.roots {
        w.write_all(&[r.kind])?;
        varint(w, r.to)?;
    }
    Ok(())
}

/// Whether bytes begin like a heap graph.
pub fn is_heap(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .data
            .get(self.at)
            .ok_or_else(|| format!("the heap graph ends early, at byte {}", self.at))?;
        self.at += 1;
        Ok(b)
    }
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("a number too long at byte {}", self.at))
    }
    /// A count of items each at least `min` bytes long, bounded by what is left.
    fn count(&mut self, min: usize) -> Result<usize, String> {
        let n = self.varint()?;
        let left = (self.data.len() - self.at) as u64;
        if n.saturating_mul(min as u64) > left {
            return Err(format!(
                "a count of {} at byte {} exceeds the file",
                n, self.at
            ));
        }
        Ok(n as usize)
    }
}

/// Reads a graph written by [`write`].
pub fn read(data: &[u8]) -> Result<Graph, String> {
    if !is_heap(data) {
        return Err("not a jlive heap graph (no JLHEAP magic)".into());
    }
    if data.get(6) != Some(&VERSION) {
        return Err(format!(
            "heap graph version {:?}, this jlive reads 1",
            data.get(6)
        ));
    }
    let mut c = Cursor { data, at: 8 };
    let mut g = Graph::default();
    for _ in 0..c.count(1)? {
        let n = c.count(1)?;
        let bytes = &data[c.at..c.at + n];
        c.at += n;
        g.classes.push(String::from_utf8_lossy(bytes).into_owned());
    }
    for _ in 0..c.count(4)? {
        let id = c.varint()?;
        let class = c.varint()?;
        if class >= g.classes.len() as u64 {
            return Err(format!(
                "object {} names class {} of {}",
                id,
                class,
                g.classes.len()
            ));
        }
        let size = c.varint()?;
        let length = c.varint()? as i64 - 1;
        g.objects.push(Object {
            id,
            class: class as u32,
            size,
            length: length.clamp(-1, i64::from(i32::MAX)) as i32,
        });
    }
    for _ in 0..c.count(3)? {
        let from = c.varint()?;
        let to = c.varint()?;
        let kind = c.byte()?;
        g.refs.push(Ref { from, to, kind });
    }
    for _ in 0..c.count(2)? {
        let kind = c.byte()?;
        let to = c.varint()?;
        g.roots.push(Root { kind, to });
    }
    Ok(g)
}

/// A class's share of the heap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassTotal {
    pub name: String,
    pub objects: u64,
    pub bytes: u64,
}

/// An object and what it alone keeps alive (its dominator subtree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retainer {
    pub id: u64,
    pub class: String,
    pub retained_bytes: u64,
    pub retained_objects: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub objects: u64,
    pub bytes: u64,
    pub references: u64,
    pub roots: u64,
    /// By bytes, largest first.
    pub classes: Vec<ClassTotal>,
    /// By retained bytes, largest first.
    pub retainers: Vec<Retainer>,
}

/// Java's spelling of an internal class name: `java.lang.String`, `[I`, `[Ljava.lang.Object;`
/// (what `jcmd GC.class_histogram` prints).
pub fn java_name(internal: &str) -> String {
    internal.replace('/', ".")
}

/// Totals by class and the `top` largest retainers.
pub fn summarize(g: &Graph, top: usize) -> Summary {
    let mut by_class: Vec<(u64, u64)> = vec![(0, 0); g.classes.len()];
    for o in &g.objects {
        let t = &mut by_class[o.class as usize];
        t.0 += 1;
        t.1 += o.size;
    }
    let mut classes: Vec<ClassTotal> = by_class
        .iter()
        .enumerate()
        .filter(|(_, t)| t.0 > 0)
        .map(|(i, t)| ClassTotal {
            name: java_name(&g.classes[i]),
            objects: t.0,
            bytes: t.1,
        })
        .collect();
    classes.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    let retained = retained_sizes(g);
    let mut order: Vec<usize> = (0..g.objects.len()).collect();
    order.sort_by(|&a, &b| retained[b].0.cmp(&retained[a].0).then(a.cmp(&b)));
    let retainers = order
        .into_iter()
        .take(top)
        .map(|i| Retainer {
            id: g.objects[i].id,
            class: java_name(&g.classes[g.objects[i].class as usize]),
            retained_bytes: retained[i].0,
            retained_objects: retained[i].1,
        })
        .collect();
    Summary {
        objects: g.objects.len() as u64,
        bytes: g.objects.iter().map(|o| o.size).sum(),
        references: g.refs.len() as u64,
        roots: g.roots.len() as u64,
        classes,
        retainers,
    }
}

/// Each object's retained (bytes, objects): the sizes of the objects it dominates from the
/// roots, itself included (Cooper, Harvey and Kennedy's iterative dominators over the
/// reverse postorder). An object no root reaches retains itself only.
fn retained_sizes(g: &Graph) -> Vec<(u64, u64)> {
    let n = g.objects.len() + 1; // node 0: the roots
    let index: HashMap<u64, usize> = g
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| (o.id, i + 1))
        .collect();
    let mut edges: Vec<(usize, usize)> = Vec::with_capacity(g.refs.len() + g.roots.len());
    edges.extend(g.roots.iter().filter_map(|r| Some((0, *index.get(&r.to)?))));
    edges.extend(
        g.refs
            .iter()
            .filter_map(|r| Some((*index.get(&r.from)?, *index.get(&r.to)?))),
    );
    let succ = csr(n, edges.iter().copied());
    let pred = csr(n, edges.iter().map(|&(a, b)| (b, a)));
    // Postorder numbers by an iterative depth-first search from node 0.
    const UNSEEN: usize = usize::MAX;
    let mut post = vec![UNSEEN; n];
    let mut order = Vec::with_capacity(n); // postorder
    let mut seen = vec![false; n];
    let mut stack = vec![(0usize, succ.0[0])];
    seen[0] = true;
    while let Some(&mut (v, ref mut next)) = stack.last_mut() {
        if *next < succ.0[v + 1] {
            let w = succ.1[*next];
            *next += 1;
            if !seen[w] {
                seen[w] = true;
                stack.push((w, succ.0[w]));
            }
        } else {
            post[v] = order.len();
            order.push(v);
            stack.pop();
        }
    }
    let mut idom = vec![UNSEEN; n];
    idom[0] = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for &v in order.iter().rev().skip(1) {
            let mut new = UNSEEN;
            for &p in &pred.1[pred.0[v]..pred.0[v + 1]] {
                if idom[p] == UNSEEN {
                    continue;
                }
                new = if new == UNSEEN {
                    p
                } else {
                    let (mut a, mut b) = (p, new);
                    while a != b {
                        while post[a] < post[b] {
                            a = idom[a];
                        }
                        while post[b] < post[a] {
                            b = idom[b];
                        }
                    }
                    a
                };
            }
            if new != UNSEEN && idom[v] != new {
                idom[v] = new;
                changed = true;
            }
        }
    }
    let mut retained: Vec<(u64, u64)> = std::iter::once((0, 0))
        .chain(g.objects.iter().map(|o| (o.size, 1)))
        .collect();
    // Postorder puts every node before its dominator.
    for &v in &order {
        if v != 0 && idom[v] != UNSEEN && idom[v] != v {
            let (b, o) = retained[v];
            let d = &mut retained[idom[v]];
            d.0 += b;
            d.1 += o;
        }
    }
    retained.remove(0);
    retained
}

/// Compressed sparse rows: offsets and targets of `n` nodes' edges.
fn csr(n: usize, edges: impl Iterator<Item = (usize, usize)> + Clone) -> (Vec<usize>, Vec<usize>) {
    let mut offsets = vec![0usize; n + 1];
    for (a, _) in edges.clone() {
        offsets[a + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut targets = vec![0usize; offsets[n]];
    for (a, b) in edges {
        targets[fill[a]] = b;
        fill[a] += 1;
    }
    (offsets, targets)
}

/// The summary as `jlive stats` prints it.
pub fn render(s: &Summary, top: usize) -> String {
    let mut out = format!(
        "heap graph: {} objects, {} bytes, {} references, {} roots\n\nobjects and bytes by class (top {}):\n",
        s.objects, s.bytes, s.references, s.roots, top
    );
    out.push_str(&format!("{:>12} {:>14}  class\n", "objects", "bytes"));
    for c in s.classes.iter().take(top) {
        out.push_str(&format!("{:>12} {:>14}  {}\n", c.objects, c.bytes, c.name));
    }
    out.push_str("\nlargest retainers (what each object alone keeps alive):\n");
    out.push_str(&format!(
        "{:>14} {:>10}  object\n",
        "retained bytes", "objects"
    ));
    for r in &s.retainers {
        out.push_str(&format!(
            "{:>14} {:>10}  {}@{}\n",
            r.retained_bytes, r.retained_objects, r.class, r.id
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// root → a → {b, c}; b → d; c → d; d → e. a dominates all; d dominates e.
    fn diamond() -> Graph {
        let o = |id, size| Object {
            id,
            class: 0,
            size,
            length: -1,
        };
        let r = |from, to| Ref { from, to, kind: 2 };
        Graph {
            classes: vec!["x/Node".into(), "[I".into()],
            objects: vec![o(1, 10), o(2, 20), o(3, 30), o(4, 40), o(5, 50)],
            refs: vec![r(1, 2), r(1, 3), r(2, 4), r(3, 4), r(4, 5)],
            roots: vec![Root { kind: 26, to: 1 }],
        }
    }

    #[test]
    fn a_graph_reads_back_as_written() {
        let mut g = diamond();
        g.objects.push(Object {
            id: 1 << 40,
            class: 1,
            size: 16,
            length: 0,
        });
        let mut bytes = Vec::new();
        write(&g, &mut bytes).unwrap();
        assert_eq!(read(&bytes).unwrap(), g);
        for cut in [3, 9, bytes.len() - 1] {
            assert!(read(&bytes[..cut]).is_err(), "cut at {}", cut);
        }
    }

    #[test]
    fn an_object_retains_what_only_it_reaches() {
        let s = summarize(&diamond(), 3);
        assert_eq!((s.objects, s.bytes), (5, 150));
        let r: Vec<(u64, u64, u64)> = s
            .retainers
            .iter()
            .map(|r| (r.id, r.retained_bytes, r.retained_objects))
            .collect();
        assert_eq!(r, [(1, 150, 5), (4, 90, 2), (5, 50, 1)]);
        assert_eq!(s.classes[0].name, "x.Node");
    }
}
