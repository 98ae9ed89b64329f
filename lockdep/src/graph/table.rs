//! The class table: every live lock class with its dependencies, under the graph lock.
//!
//! Semantics from the kernel's `lock_classes[]`, `register_lock_class()` (class creation),
//! the `locks_after` / `locks_before` lists and `zap_class()`; the storage is our own (hash
//! maps per class, a free list of slots). A slot's liveness is mirrored, lock-free, in the
//! generation table (`class::generation`), which creation and zap update.

use hashbrown::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::edges::{Edge, EdgeSites};
use super::instances::Instances;
use super::search::Deps;
use super::shape::reshaped;
use crate::class::{generation, ClassId, KeyRef};
use crate::limits::{MAX_CLASSES, MAX_SUBCLASSES};
use crate::mode::Kind;
use crate::nesting::Nesting;

/// One live lock class.
#[derive(Debug)]
pub(crate) struct ClassNode {
    pub id: ClassId,
    pub name: Arc<str>,
    pub key: KeyRef,
    /// The nesting rule its key fixes, if any (else the global one applies).
    pub nesting: Option<Nesting>,
    /// Dependencies `self -> other`, by the other class's slot index.
    pub after: HashMap<u32, Edge>,
    /// Slot indexes of classes with a dependency into `self`.
    pub before: HashSet<u32>,
}

/// The slots of one key's classes, by subclass ([`NO_SLOT`] for a subclass with none): one
/// hash lookup finds any class of a key, and one removal forgets all of them.
type KeyClasses = [u32; MAX_SUBCLASSES as usize];

/// Classes created and dependencies recorded since the process started (zaps and resets do
/// not subtract): what a process's exit line says it validated, read without the graph lock.
static CLASSES_MADE: AtomicU64 = AtomicU64::new(0);
static DEPENDENCIES_RECORDED: AtomicU64 = AtomicU64::new(0);

/// `(classes created, dependencies recorded)` since the process started. Lock-free.
pub(crate) fn lifetime_counts() -> (u64, u64) {
    // Relaxed: statistics, read at exit; no data is published through them.
    (
        CLASSES_MADE.load(Ordering::Relaxed),
        DEPENDENCIES_RECORDED.load(Ordering::Relaxed),
    )
}

/// A [`KeyClasses`] entry of a subclass that has no class.
const NO_SLOT: u32 = u32::MAX;

/// The storage of a zapped class, kept for the next class created: its maps, emptied but
/// with their room, and its name, which that creation releases. With dynamic keys, classes
/// are created by the threads that first take their locks and zapped by the thread that
/// unregisters the key; so a zap frees nothing (no cross-thread free, under the graph lock,
/// of memory another thread allocated) and a creation reuses what it can.
struct Spare {
    name: Arc<str>,
    after: HashMap<u32, Edge>,
    before: HashSet<u32>,
}

/// At most this many zapped classes' storage is kept for reuse; a zap past it frees.
const MAX_SPARES: usize = 64;

/// The most entries a spare's maps may have room for: a class with more dependencies (a hub)
/// is freed when zapped, so that the spares stay small (64 classes of a few dozen
/// dependencies each) whatever classes were zapped.
const SPARE_ROOM: usize = 64;

/// The class table plus the dependency graph.
#[derive(Default)]
pub(crate) struct Graph {
    classes: Vec<Option<ClassNode>>,
    free: Vec<u32>,
    /// Storage of zapped classes for the next creations (at most [`MAX_SPARES`]).
    spare: Vec<Spare>,
    by_key: HashMap<KeyRef, KeyClasses>,
    /// Number of (pair, kind) dependencies.
    dependency_count: usize,
    /// The instance-order pairs of each class.
    pub instances: Instances,
}

/// The live classes of one key, by subclass ([`Graph::classes_of`]): a copy, valid while the
/// graph lock that made it is held.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyClassIds {
    ids: [ClassId; MAX_SUBCLASSES as usize],
    len: usize,
}

impl KeyClassIds {
    /// The ids, by subclass.
    pub fn as_slice(&self) -> &[ClassId] {
        &self.ids[..self.len]
    }

    /// Whether the key has no live class.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `class` is one of them.
    pub fn contains(&self, class: ClassId) -> bool {
        self.as_slice().contains(&class)
    }
}

/// All [`MAX_CLASSES`] classes are live.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TableFull;

impl Graph {
    /// The live class with this id, if any.
    pub fn class(&self, id: ClassId) -> Option<&ClassNode> {
        match self.classes.get(id.index() as usize) {
            Some(Some(c)) if c.id == id => Some(c),
            _ => None,
        }
    }

    /// The live class in slot `index`.
    pub fn slot(&self, index: u32) -> Option<&ClassNode> {
        self.classes.get(index as usize).and_then(Option::as_ref)
    }

    /// Every live class, by slot.
    pub fn classes(&self) -> impl Iterator<Item = &ClassNode> {
        self.classes.iter().flatten()
    }

    /// Number of live classes.
    pub fn class_count(&self) -> usize {
        self.classes.len() - self.free.len()
    }

    /// Number of recorded dependencies, counted by kind (a pair with EN and SR counts 2).
    pub fn dependency_count(&self) -> usize {
        self.dependency_count
    }

    /// The live class of `(key, subclass)`, if there is one.
    pub fn find(&self, key: KeyRef, subclass: u8) -> Option<ClassId> {
        let &index = self.by_key.get(&key)?.get(usize::from(subclass))?;
        self.slot(index).map(|c| c.id)
    }

    /// The live classes of `key` (any subclass), found with one lookup.
    pub fn classes_of(&self, key: KeyRef) -> KeyClassIds {
        let mut ids = KeyClassIds {
            ids: [ClassId::NONE; MAX_SUBCLASSES as usize],
            len: 0,
        };
        let live = self.by_key.get(&key).into_iter().flatten();
        for id in live.filter_map(|&index| self.slot(index).map(|c| c.id)) {
            ids.ids[ids.len] = id;
            ids.len += 1;
        }
        ids
    }

    /// Creates the class of `(key, subclass)` named after `name` (with `/subclass` appended
    /// for subclasses other than 0), with the nesting rule its key fixes, if any; the kernel's
    /// `register_lock_class()`. The caller checked that it does not exist and that `subclass`
    /// is below [`MAX_SUBCLASSES`] (panics otherwise). Fails when [`MAX_CLASSES`] classes
    /// are live.
    pub fn create(
        &mut self,
        key: KeyRef,
        subclass: u8,
        name: &str,
        nesting: Option<Nesting>,
    ) -> Result<ClassId, TableFull> {
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.classes.len() < MAX_CLASSES => {
                self.classes.push(None);
                (self.classes.len() - 1) as u32
            }
            None => return Err(TableFull),
        };
        let id = generation::make_live(index);
        let name: Arc<str> = if subclass == 0 {
            Arc::from(name)
        } else {
            Arc::from(format!("{name}/{subclass}"))
        };
        let (after, before) = match self.spare.pop() {
            Some(Spare {
                name: zapped,
                after,
                before,
            }) => {
                // The zapped class's name is released here, by the creating thread.
                drop(zapped);
                (after, before)
            }
            None => Default::default(),
        };
        self.classes[index as usize] = Some(ClassNode {
            id,
            name,
            key,
            nesting,
            after,
            before,
        });
        self.by_key
            .entry(key)
            .or_insert([NO_SLOT; MAX_SUBCLASSES as usize])[usize::from(subclass)] = index;
        // Relaxed: a statistic (see `lifetime_counts`).
        CLASSES_MADE.fetch_add(1, Ordering::Relaxed);
        Ok(id)
    }

    /// The nesting rule of a live class: its key's, or the global one.
    pub fn nesting(&self, id: ClassId) -> Nesting {
        self.class(id)
            .and_then(|c| c.nesting)
            .unwrap_or_else(crate::nesting::nesting)
    }

    /// True if the dependency `from -> to` of this kind is recorded.
    pub fn has_kind(&self, from: ClassId, to: ClassId, kind: Kind) -> bool {
        self.class(from)
            .and_then(|c| c.after.get(&to.index()))
            .is_some_and(|e| e.has(kind))
    }

    /// Records the dependency `from -> to` of this kind. Both classes must be live.
    pub fn add(&mut self, from: ClassId, to: ClassId, kind: Kind, sites: EdgeSites) {
        let (fi, ti) = (from.index(), to.index());
        let Some(Some(node)) = self.classes.get_mut(fi as usize) else {
            return;
        };
        let edge = node.after.entry(ti).or_default();
        let before = edge.count();
        if edge.insert(kind, sites) {
            let added = edge.count() - before;
            self.dependency_count += added;
            // Relaxed: a statistic (see `lifetime_counts`).
            DEPENDENCIES_RECORDED.fetch_add(added as u64, Ordering::Relaxed);
            reshaped();
        }
        if let Some(Some(target)) = self.classes.get_mut(ti as usize) {
            target.before.insert(fi);
        }
    }

    /// Removes a class, every dependency into or out of it, and its key mapping (the
    /// kernel's `zap_class()`; the validator zaps whole keys, [`zap_key`](Self::zap_key)).
    /// The slot's generation changes, so cached ids and cached chains that mention the class
    /// can never match again.
    #[cfg(test)]
    pub fn zap(&mut self, index: u32) {
        let Some(key) = self.slot(index).map(|c| c.key) else {
            return;
        };
        self.unlink_class(index);
        if let Some(slots) = self.by_key.get_mut(&key) {
            slots
                .iter_mut()
                .filter(|s| **s == index)
                .for_each(|s| *s = NO_SLOT);
            if slots.iter().all(|&s| s == NO_SLOT) {
                self.by_key.remove(&key);
            }
        }
    }

    /// `zap` (the tests' zap of one class) but for the key mapping, which the caller updates: takes the class
    /// out of its slot with every dependency into or out of it and its instance pairs, frees
    /// the slot and keeps the class's storage as a [`Spare`]. False for a free slot.
    fn unlink_class(&mut self, index: u32) -> bool {
        let Some(node) = self.classes.get_mut(index as usize).and_then(Option::take) else {
            return false;
        };
        reshaped();
        for (to, edge) in &node.after {
            self.dependency_count -= edge.count();
            if let Some(Some(t)) = self.classes.get_mut(*to as usize) {
                t.before.remove(&index);
            }
        }
        for from in &node.before {
            if let Some(Some(f)) = self.classes.get_mut(*from as usize) {
                if let Some(edge) = f.after.remove(&index) {
                    self.dependency_count -= edge.count();
                }
            }
        }
        self.instances.drop_class(index);
        generation::make_dead(index);
        self.free.push(index);
        let ClassNode {
            name,
            mut after,
            mut before,
            ..
        } = node;
        if self.spare.len() < MAX_SPARES
            && after.capacity() <= SPARE_ROOM
            && before.capacity() <= SPARE_ROOM
        {
            after.clear();
            before.clear();
            self.spare.push(Spare {
                name,
                after,
                before,
            });
        }
        true
    }

    /// Asks for the lines a [`zap_key`](Self::zap_key) of `ids`'s key will write first (each
    /// class's slot and generation word), so that their transfers from the CPUs that used the
    /// classes last overlap each other and the caller's work until the zap (see
    /// [`prefetch`](crate::prefetch)). A hint: changes nothing.
    pub fn prefetch_zap(&self, ids: &KeyClassIds) {
        for id in ids.as_slice() {
            if let Some(slot) = self.classes.get(id.index() as usize) {
                crate::prefetch::for_write(slot);
            }
            generation::prefetch_for_write(id.index());
        }
    }

    /// Zaps every class whose key is `key` (all subclasses, found with one lookup); returns
    /// how many there were.
    pub fn zap_key(&mut self, key: KeyRef) -> usize {
        let Some(slots) = self.by_key.remove(&key) else {
            return 0;
        };
        slots
            .into_iter()
            .filter(|&i| i != NO_SLOT && self.unlink_class(i))
            .count()
    }

    /// Zaps every class. The slots are freed from the last one down, so that classes
    /// created next take them from the first one up, as in a fresh table: the same program
    /// gets the same slots (and so the same reports, see `search`) after a reset.
    pub fn zap_all(&mut self) {
        for i in (0..self.classes.len() as u32).rev() {
            self.unlink_class(i);
        }
        self.by_key.clear();
        self.instances.clear();
    }

    /// Forgets every instance pair of the lock instance `instance` (its map is freed or
    /// re-initialised), so that a new lock at the same address inherits none.
    pub fn forget_instance(&mut self, instance: usize) {
        self.instances.forget(instance);
    }

    /// Forgets every instance pair of the instances whose hint is `hint` (see
    /// `instances::hint`): a freed or re-initialised map's, wherever it was when its pairs
    /// were recorded.
    pub fn forget_hinted(&mut self, hint: u64) {
        self.instances.forget_hinted(hint);
    }
}

/// The class graph as the strong-path search sees it: class slots and their dependencies.
impl Deps for Graph {
    type Node = u32;

    fn has_way_in(&self, n: u32) -> bool {
        matches!(self.slot(n), Some(c) if !c.before.is_empty())
    }

    fn has_way_out(&self, n: u32) -> bool {
        matches!(self.slot(n), Some(c) if !c.after.is_empty())
    }

    fn for_each_after(&self, n: u32, f: &mut dyn FnMut(u32, &Edge)) {
        if let Some(c) = self.slot(n) {
            for (&to, e) in &c.after {
                f(to, e);
            }
        }
    }
}

/// Tests on private graphs. Creating and zapping classes also writes the process-wide
/// generation words of the slots used, which no test here reads.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::{LockClassKey, StaticKey};
    use crate::mode::Mode;

    fn sites() -> EdgeSites {
        EdgeSites::for_tests()
    }

    static KEYS: [LockClassKey; 4] = [const { LockClassKey::new() }; 4];

    fn key(n: usize) -> KeyRef {
        KeyRef::Static(StaticKey(&KEYS[n]))
    }

    const EN: Kind = Kind {
        holder: crate::mode::Hold::E,
        acquirer: Mode::Exclusive,
    };
    const SR: Kind = Kind {
        holder: crate::mode::Hold::S,
        acquirer: Mode::RecursiveRead,
    };
    const ER: Kind = Kind {
        holder: crate::mode::Hold::E,
        acquirer: Mode::RecursiveRead,
    };
    const SN: Kind = Kind {
        holder: crate::mode::Hold::S,
        acquirer: Mode::Exclusive,
    };

    #[test]
    fn create_names_subclasses_and_finds_by_key() {
        let mut g = Graph::default();
        let a = g.create(key(1), 0, "A", None).unwrap();
        let a1 = g.create(key(1), 1, "A", None).unwrap();
        assert_eq!(&*g.class(a).unwrap().name, "A");
        assert_eq!(&*g.class(a1).unwrap().name, "A/1");
        assert_eq!(g.find(key(1), 0), Some(a));
        assert_eq!(g.find(key(1), 1), Some(a1));
        assert_eq!(g.find(key(2), 0), None);
        assert_eq!(g.class_count(), 2);
    }

    #[test]
    fn zap_removes_the_class_and_every_dependency_touching_it() {
        let mut g = Graph::default();
        let [a, b, c] = [1, 2, 3].map(|n| g.create(key(n), 0, "class", None).unwrap());
        g.add(a, b, EN, sites());
        g.add(a, b, SR, sites());
        g.add(b, c, EN, sites());
        g.add(c, a, ER, sites());
        assert_eq!(g.dependency_count(), 4);
        g.zap(b.index());
        assert!(g.class(b).is_none());
        assert_eq!(g.dependency_count(), 1, "only C -> A is left");
        assert!(g.has_kind(c, a, ER));
        assert!(!g.slot(a.index()).unwrap().after.contains_key(&b.index()));
        assert!(!g.slot(c.index()).unwrap().before.contains(&b.index()));
        assert_eq!(g.class_count(), 2);
        // Zapping a free slot does nothing.
        g.zap(b.index());
        assert_eq!(g.class_count(), 2);
    }

    /// A zapped hub (a class with many dependencies) is not kept as a spare: the spares'
    /// room stays small whatever was zapped.
    #[test]
    fn a_zapped_hub_is_freed_not_kept() {
        let mut g = Graph::default();
        let hub = g.create(key(1), 0, "hub", None).unwrap();
        let small = g.create(key(2), 0, "small", None).unwrap();
        for n in 0..1_000 {
            let leaf = g.create(KeyRef::Instance(n), 0, "leaf", None).unwrap();
            g.add(hub, leaf, EN, sites());
        }
        g.add(small, hub, EN, sites());
        g.zap(hub.index());
        g.zap(small.index());
        assert_eq!(g.spare.len(), 1, "the small class is kept, the hub is not");
        assert!(g
            .spare
            .iter()
            .all(|s| s.after.capacity() <= SPARE_ROOM && s.before.capacity() <= SPARE_ROOM));
    }

    /// After a reset, classes take the slots from the first one up, as in a fresh table.
    #[test]
    fn after_zap_all_slots_are_handed_out_from_the_first() {
        let mut g = Graph::default();
        let fresh: Vec<u32> = (0..5)
            .map(|n| g.create(KeyRef::Instance(n), 0, "c", None).unwrap().index())
            .collect();
        g.zap_all();
        let again: Vec<u32> = (0..5)
            .map(|n| g.create(KeyRef::Instance(n), 0, "c", None).unwrap().index())
            .collect();
        assert_eq!(again, fresh);
    }

    #[test]
    fn a_reused_slot_is_a_new_class() {
        let mut g = Graph::default();
        let old = g.create(key(1), 0, "old", None).unwrap();
        g.zap(old.index());
        let new = g.create(key(2), 0, "new", None).unwrap();
        assert_eq!(new.index(), old.index(), "the free slot is reused");
        assert_ne!(new, old);
        assert!(
            g.class(old).is_none(),
            "the old id does not name the new class"
        );
        assert_eq!(g.find(key(1), 0), None);
    }

    #[test]
    fn zap_key_removes_all_subclasses_of_the_key() {
        let mut g = Graph::default();
        let ids: Vec<ClassId> = (0..3)
            .map(|s| g.create(key(1), s, "K", None).unwrap())
            .collect();
        let other = g.create(key(2), 0, "L", None).unwrap();
        g.add(ids[0], ids[1], EN, sites());
        g.add(other, ids[2], EN, sites());
        assert_eq!(g.classes_of(key(1)).as_slice(), ids);
        assert_eq!(g.zap_key(key(1)), 3);
        assert_eq!(g.class_count(), 1);
        assert_eq!(g.dependency_count(), 0);
        assert!(g.slot(other.index()).unwrap().after.is_empty());
        assert!((0..3).all(|s| g.find(key(1), s).is_none()));
        assert!(g.classes_of(key(1)).is_empty());
        assert_eq!(g.zap_key(key(1)), 0, "nothing left to zap");
        assert_eq!(g.find(key(2), 0), Some(other));
    }

    #[test]
    fn zapping_one_subclass_keeps_the_others_of_its_key() {
        let mut g = Graph::default();
        let k0 = g.create(key(3), 0, "K", None).unwrap();
        let k2 = g.create(key(3), 2, "K", None).unwrap();
        g.zap(k0.index());
        assert_eq!(g.find(key(3), 0), None);
        assert_eq!(g.find(key(3), 2), Some(k2));
        assert_eq!(g.classes_of(key(3)).as_slice(), [k2]);
        assert!(g.classes_of(key(3)).contains(k2) && !g.classes_of(key(3)).contains(k0));
        // A new class of the zapped subclass is found again, next to the other.
        let k0b = g.create(key(3), 0, "K", None).unwrap();
        assert_eq!(g.find(key(3), 0), Some(k0b));
        g.zap(k2.index());
        g.zap(k0b.index());
        assert!(g.classes_of(key(3)).is_empty());
        assert_eq!(g.zap_key(key(3)), 0);
        g.zap_all();
        assert_eq!(g.class_count(), 0);
    }

    #[test]
    fn a_class_made_in_a_zapped_slot_starts_with_no_dependency() {
        let mut g = Graph::default();
        let [a, b, c] = [1, 2, 3].map(|n| g.create(key(n), 0, "class", None).unwrap());
        g.add(a, b, EN, sites());
        g.add(c, a, EN, sites());
        g.zap_key(key(1));
        // The new class takes a's slot and a's storage.
        let d = g.create(key(0), 0, "D", None).unwrap();
        assert_eq!(d.index(), a.index());
        let node = g.class(d).unwrap();
        assert!(node.after.is_empty() && node.before.is_empty());
        assert_eq!(&*node.name, "D");
        assert!(!g.has_kind(d, b, EN) && !g.has_kind(c, d, EN));
        assert!(g.slot(b.index()).unwrap().before.is_empty());
        assert!(g.slot(c.index()).unwrap().after.is_empty());
        assert_eq!(g.dependency_count(), 0);
    }

    #[test]
    fn a_pair_keeps_the_sites_of_each_kind() {
        let mut g = Graph::default();
        let a = g.create(key(1), 0, "A", None).unwrap();
        let b = g.create(key(2), 0, "B", None).unwrap();
        let first = sites();
        let second = sites();
        g.add(a, b, EN, first.clone());
        g.add(a, b, SR, second.clone());
        let edge = &g.class(a).unwrap().after[&b.index()];
        assert_eq!(edge.sites(EN).unwrap().prev, first.prev);
        assert_eq!(edge.sites(SR).unwrap().prev, second.prev);
        assert_eq!(edge.first_sites().unwrap().prev, first.prev);
        assert!(edge.sites(ER).is_none());
        assert_eq!(edge.count(), 2);
        assert_eq!(g.dependency_count(), 2);
    }

    #[test]
    fn adding_a_known_dependency_counts_it_once() {
        let mut g = Graph::default();
        let a = g.create(key(1), 0, "A", None).unwrap();
        let b = g.create(key(2), 0, "B", None).unwrap();
        g.add(a, b, EN, sites());
        g.add(a, b, EN, sites());
        assert_eq!(g.dependency_count(), 1);
        assert!(g.has_kind(a, b, EN));
        assert!(!g.has_kind(a, b, SN));
        assert!(!g.has_kind(b, a, EN));
    }
}
