import { main } from '../../shared/process.js';
import { widgetService } from './index.js';

await main({ name: 'widget', services: [widgetService], workers: [] });
