//! Feature `serde`: locks serialize as their contents and deserialize into a new, unlocked
//! lock; a struct of locks derives both.

use parking_lot::{FairMutex, Mutex, ReentrantMutex, RwLock};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Document {
    title: Mutex<String>,
    tags: RwLock<Vec<String>>,
    revision: FairMutex<u32>,
    owner: ReentrantMutex<Option<String>>,
}

#[test]
fn struct_of_locks_round_trips() {
    // covers: Mutex: Serialize, Mutex: Deserialize, RwLock: Serialize, RwLock: Deserialize
    // covers: FairMutex: Serialize, FairMutex: Deserialize
    // covers: ReentrantMutex: Serialize, ReentrantMutex: Deserialize
    let doc = Document {
        title: Mutex::new("t".into()),
        tags: RwLock::new(vec!["a".into(), "b".into()]),
        revision: FairMutex::new(3),
        owner: ReentrantMutex::new(Some("me".into())),
    };
    let json = serde_json::to_string(&doc).expect("serialize");
    assert_eq!(
        json,
        r#"{"title":"t","tags":["a","b"],"revision":3,"owner":"me"}"#
    );
    let back: Document = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(*back.title.lock(), "t");
    assert_eq!(*back.tags.read(), ["a", "b"]);
    assert_eq!(*back.revision.lock(), 3);
    assert_eq!(back.owner.lock().as_deref(), Some("me"));
    assert!(!back.title.is_locked() && !back.tags.is_locked() && !back.revision.is_locked());
    assert!(!back.owner.is_locked(), "deserialized locks start unlocked");
}

#[test]
fn single_locks_round_trip() {
    // covers: Mutex: Serialize, Mutex: Deserialize, RwLock: Serialize, RwLock: Deserialize
    let m = Mutex::new([1u8, 2]);
    let bytes = serde_json::to_vec(&m).expect("serialize");
    let back: Mutex<[u8; 2]> = serde_json::from_slice(&bytes).expect("deserialize");
    assert_eq!(back.into_inner(), [1, 2]);
    let r: RwLock<Option<u8>> = serde_json::from_str("null").expect("deserialize");
    assert_eq!(serde_json::to_string(&r).expect("serialize"), "null");
    // A read lock held elsewhere does not block serialization (it takes a read lock too).
    let held = r.read();
    assert_eq!(serde_json::to_string(&r).expect("serialize"), "null");
    drop(held);
    assert!(
        serde_json::from_str::<Mutex<u8>>("\"x\"").is_err(),
        "bad input is an error"
    );
}
