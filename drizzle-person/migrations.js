import journal from './meta/_journal.json';
import m0000 from './0000_person.sql';
import m0001 from './0001_contacts_trust_index.sql';
import m0002 from './0002_receiving_budget.sql';
import m0003 from './0003_facts_version.sql';
import m0004 from './0004_caller_verification.sql';
import m0005 from './0005_idempotency_keys.sql';
import m0006 from './0006_request_outbox_and_erasure.sql';
import m0007 from './0007_heartbeat_facts.sql';
import m0008 from './0008_idempotency_charges.sql';
import m0009 from './0009_push_registrations.sql';
import m0010 from './0010_devices.sql';
import m0011 from './0011_names_travel_with_facts.sql';
import m0012 from './0012_peer_card_versions.sql';

  export default {
    journal,
    migrations: {
      m0000,
m0001,
m0002,
m0003,
m0004,
m0005,
m0006,
m0007,
m0008,
m0009,
m0010,
m0011,
m0012
    }
  }
  