//! railpath's shared foundations, used by the simulator, the radio model and the gateway:
//! integer nanosecond time ([`Time`]) and seeded, named random streams ([`Rng`]).

pub mod rng;
pub mod time;

pub use rng::Rng;
pub use time::Time;
