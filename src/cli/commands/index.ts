import type { Command } from '../command.js';
import { doctorCommand } from './doctor.js';
import { inspectCommand } from './inspect.js';
import { leasesCommand } from './leases.js';
import { portCommand } from './port.js';
import { releaseCommand } from './release.js';

export const commands: Command[] = [inspectCommand, doctorCommand, portCommand, releaseCommand, leasesCommand];
